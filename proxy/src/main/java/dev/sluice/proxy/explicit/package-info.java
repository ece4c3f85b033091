/**
 * The explicit listener's pipeline ({@code ExplicitChannelInitializer}).
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.explicit;

import org.jspecify.annotations.NullMarked;
