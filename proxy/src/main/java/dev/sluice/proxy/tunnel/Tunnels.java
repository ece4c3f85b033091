package dev.sluice.proxy.tunnel;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.Reads;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;

/**
 * Joins two connected channels into a blind tunnel, for phases outside this package (the transparent
 * listener). Same semantics as a CONNECT tunnel: one {@link TunnelRelay} per direction (no copy,
 * writability drives autoRead, FIN becomes a shutdown of the peer's output), and one audit record,
 * emitted when both channels have closed.
 */
public final class Tunnels {

    private Tunnels() {
    }

    /**
     * Adds a relay named {@code relay} at the end of both pipelines and turns reading on. Call on the
     * channels' event loop (both channels must share it), after the caller has written and flushed
     * any bytes that must go first.
     *
     * @param downstream the client's channel
     * @param upstream the connected upstream channel
     * @param audit the tunnel's audit record; emitted once, when both channels have closed
     */
    public static void join(Channel downstream, Channel upstream, AuditEvent audit) {
        TunnelSession session = new TunnelSession(audit);
        downstream.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
        upstream.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
        upstream.pipeline().addLast("relay", new TunnelRelay(session, downstream, false));
        downstream.pipeline().addLast("relay", new TunnelRelay(session, upstream, true));
        if (!upstream.isActive()) {
            downstream.close();
        }
        Reads.setAutoRead(upstream, true);
        Reads.setAutoRead(downstream, true);
    }
}
