/**
 * Decisions as pure functions of values ({@link dev.sluice.rules.decision.Decider}), with one reason enum and the built-in rule ids.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.decision;

import org.jspecify.annotations.NullMarked;
