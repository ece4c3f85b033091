package dev.sluice.proxy.tls;

import io.netty.channel.ChannelPipeline;

/**
 * Adds TLS to an upstream connection to an inspected host: client mode, SNI and the peer host set,
 * so that hostname verification and pins apply to {@code host}.
 */
@FunctionalInterface
public interface UpstreamTls {

    /**
     * Adds the TLS handlers for {@code host:port} at the end of {@code pipeline}: {@code "tls"} (the
     * {@link io.netty.handler.ssl.SslHandler}) and behind it handlers that hold writes until the
     * handshake, trust decision included, has succeeded. Add the HTTP codec after them.
     */
    void install(ChannelPipeline pipeline, String host, int port);
}
