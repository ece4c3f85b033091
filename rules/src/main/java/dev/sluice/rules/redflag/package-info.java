/**
 * Red-flag rules (prompt-injection and exfiltration signs): built-ins, custom rules, the scan.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.redflag;

import org.jspecify.annotations.NullMarked;
