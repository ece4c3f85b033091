/**
 * Helpers of the rules module that are not API: the YAML tree with locations, path globs.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.rules.internal;

import org.jspecify.annotations.NullMarked;
