/**
 * The NIO / epoll transport choice.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.proxy.transport;

import org.jspecify.annotations.NullMarked;
