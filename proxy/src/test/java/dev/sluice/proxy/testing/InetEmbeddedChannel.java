package dev.sluice.proxy.testing;

import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * An EmbeddedChannel with IP socket addresses, as a TCP connection has (handlers that record the
 * client's address read them as {@link InetSocketAddress}).
 */
public final class InetEmbeddedChannel extends EmbeddedChannel {

    private final InetSocketAddress local;
    private final InetSocketAddress remote;

    /** A channel from {@code remote} (the client) to {@code local} (the listener), with no handlers yet. */
    public InetEmbeddedChannel(InetSocketAddress local, InetSocketAddress remote) {
        super(false, false);
        this.local = local;
        this.remote = remote;
        register0();
    }

    private void register0() {
        try {
            register();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }
}
