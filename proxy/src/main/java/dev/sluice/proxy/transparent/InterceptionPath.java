package dev.sluice.proxy.transparent;

import dev.sluice.proxy.explicit.ConnectRequest;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

/**
 * The seam where TLS interception of inspected hosts plugs into the transparent listener. After the
 * ClientHello was read and the name decided (allow or would_deny), {@link TransparentTunnelHandler}
 * asks {@link #inspects}; when it answers true, the connection is handed over with
 * {@link #intercept} instead of being dialled and relayed blind.
 *
 * <p>Until interception is built (the policy loader still refuses {@code inspect}), the server passes
 * {@link #NONE}, which inspects nothing.
 */
public interface InterceptionPath {

    /** Inspects nothing: every allowed TLS connection becomes a blind tunnel. */
    InterceptionPath NONE = new InterceptionPath() {
        @Override
        public boolean inspects(Policy policy, Target target) {
            return false;
        }

        @Override
        public void intercept(ChannelHandlerContext ctx, ConnectRequest request, ByteBuf clientHello) {
            clientHello.release();
            throw new IllegalStateException("no interception path: inspects() is always false");
        }
    };

    /** Answers whether {@code target} is an inspected host under {@code policy}. */
    boolean inspects(Policy policy, Target target);

    /**
     * Takes over the downstream connection: terminate TLS with a leaf for {@code request.target()},
     * open TLS upstream through {@code ProxyContext.dialer()}, relay HTTP through the redactor.
     * Called on the channel's event loop with reading off; the handler that called it has left the
     * pipeline.
     *
     * @param ctx the context of the calling handler (its pipeline is the downstream connection's)
     * @param request the decided target, decision, policy snapshot, audit record ({@code tls.mode}
     *     to be set to {@code intercept}), and byte counters
     * @param clientHello the bytes read so far, ClientHello first (ownership passes to the callee)
     */
    void intercept(ChannelHandlerContext ctx, ConnectRequest request, ByteBuf clientHello);
}
