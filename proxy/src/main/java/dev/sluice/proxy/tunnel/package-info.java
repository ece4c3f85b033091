/**
 * CONNECT tunnels: {@code ConnectHandler} and {@code TunnelRelay}.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.tunnel;

import org.jspecify.annotations.NullMarked;
