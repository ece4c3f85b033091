/**
 * The composition root's commands (picocli): {@code run}, {@code audit}, {@code decide}, {@code env}, and the policy suggester.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.cli;

import org.jspecify.annotations.NullMarked;
