package dev.sluice.proxy.exchange;


import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

/**
 * The seam where TLS interception of inspected hosts plugs into the transparent listener. After the
 * ClientHello was read and the name decided (allow or would_deny), a decision whose
 * {@code tunnelMode()} is {@code INTERCEPT} is handed over with {@link #intercept}; when the path is not
 * {@link #available()}, the transparent listener refuses it ({@code interception_unavailable})
 * rather than relay an inspected host blind.
 *
 * <p>{@link #NONE} intercepts nothing: with it, every connection to an inspected host is refused.
 */
public interface InterceptionPath {

    /** Intercepts nothing: connections to inspected hosts are refused, never relayed blind. */
    InterceptionPath NONE = new InterceptionPath() {
        @Override
        public boolean available() {
            return false;
        }

        @Override
        public void intercept(ChannelHandlerContext ctx, ConnectRequest request, ByteBuf clientHello) {
            clientHello.release();
            throw new IllegalStateException("no interception path: available() is false");
        }
    };

    /** Answers whether this path can intercept (its TLS material is there). */
    boolean available();

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
