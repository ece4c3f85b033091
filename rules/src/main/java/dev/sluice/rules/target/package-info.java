/**
 * Canonical request targets (RFC 9112 section 3.2 forms, IDNA, every IP-literal spelling).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.target;

import org.jspecify.annotations.NullMarked;
