/**
 * The messages between phases: {@code ForwardRequest}, {@code ConnectRequest}, {@code ExchangeControl}, {@code RequestFront}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.exchange;

import org.jspecify.annotations.NullMarked;
