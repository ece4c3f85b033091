/**
 * Egress byte and token budgets ({@code EgressBudgets}).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.limits;

import org.jspecify.annotations.NullMarked;
