package dev.sluice.proxy.intercept;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslHandler;

/**
 * Makes the TLS handler of an upstream connection to an inspected host (client mode, SNI and the peer
 * host set, so that hostname verification and pins apply to {@code host}).
 */
@FunctionalInterface
public interface UpstreamTls {

    /** Returns a new client-mode handler for {@code host:port}. */
    SslHandler newHandler(ByteBufAllocator alloc, String host, int port);
}
