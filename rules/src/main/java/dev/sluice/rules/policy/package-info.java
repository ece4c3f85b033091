/**
 * The policy model (records) and its loader: {@link dev.sluice.rules.policy.PolicyLoader} with one package-private reader per top-level section.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.policy;

import org.jspecify.annotations.NullMarked;
