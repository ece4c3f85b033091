package dev.sluice.proxy.forward;

import dev.sluice.proxy.tls.InterceptionTls;
import dev.sluice.rules.policy.Policy;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Promise;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;

/**
 * Sits behind the TLS handlers of a fresh upstream connection that offered {@code h2} and
 * {@code http/1.1} by ALPN (RFC 7301) and, once the handshake (trust and pin check included) has
 * succeeded, sets the connection up for the protocol the origin chose: {@code h2} gets
 * {@link H2Upstream}'s frame codec and stream multiplexer, anything else (http/1.1, or no ALPN answer)
 * gets the HTTP/1.1 client codec and a placeholder {@code response} handler that the owning forwarder
 * replaces. Then it completes its promise with a {@link Negotiated} and steps aside; bytes the origin
 * sent in the same read as the end of the handshake (an h2 server's SETTINGS) are held and handed to
 * the new handlers. A failed handshake, an error or a close before the handshake ends fails the promise
 * with the cause (a pin mismatch among them).
 */
final class UpstreamAlpn extends ChannelInboundHandlerAdapter {

    /** Pipeline name. */
    static final String NAME = "alpn";

    /** What the handshake gave: the chosen protocol, the pin check, the h2 connection (null on HTTP/1.1). */
    record Negotiated(String protocol, dev.sluice.certs.PinResult pin, H2Upstream h2) {
    }

    private final String authority;
    private final Policy policy;
    private final Promise<Negotiated> done;
    private final ArrayDeque<Object> early = new ArrayDeque<>();
    private boolean settled;

    UpstreamAlpn(String authority, Policy policy, Promise<Negotiated> done) {
        this.authority = authority;
        this.policy = policy;
        this.done = done;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (settled) {
            ctx.fireChannelRead(msg);
        } else {
            early.add(msg);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (!(evt instanceof SslHandshakeCompletionEvent handshake) || settled) {
            ctx.fireUserEventTriggered(evt);
            return;
        }
        if (!handshake.isSuccess()) {
            settled = true;
            done.tryFailure(handshake.cause());
            ctx.fireUserEventTriggered(evt);
            return;
        }
        SslHandler tls = ctx.pipeline().get(SslHandler.class);
        String protocol = tls == null || tls.applicationProtocol() == null
                ? ApplicationProtocolNames.HTTP_1_1 : tls.applicationProtocol();
        dev.sluice.certs.PinResult pin = tls == null ? dev.sluice.certs.PinResult.NONE
                : InterceptionTls.pinCheck(tls.engine().getSession()).map(check -> check.result())
                        .orElse(dev.sluice.certs.PinResult.NONE);
        ChannelPipeline pipeline = ctx.pipeline();
        H2Upstream h2 = null;
        if (ApplicationProtocolNames.HTTP_2.equals(protocol)) {
            h2 = H2Upstream.install(ctx.channel(), NAME, authority, policy, pin);
        } else {
            pipeline.addAfter(NAME, "codec", new HttpClientCodec(8192, HttpForwarder.MAX_RESPONSE_HEADER_BYTES, 65_536));
            pipeline.addAfter("codec", "response", new Unclaimed());
        }
        settled = true;
        pipeline.remove(this);
        done.trySuccess(new Negotiated(protocol, pin, h2));
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        while (!early.isEmpty()) {
            Object msg = early.poll();
            if (settled && ctx.channel().isActive()) {
                ctx.fireChannelRead(msg);
            } else {
                ReferenceCountUtil.release(msg);
            }
        }
        if (settled) {
            ctx.fireChannelReadComplete();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        settled = true;
        done.tryFailure(new ClosedChannelException());
        while (!early.isEmpty()) {
            ReferenceCountUtil.release(early.poll());
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        done.tryFailure(cause);
        ctx.close();
    }

    /**
     * The {@code response} handler of an HTTP/1.1 connection nobody has claimed yet: anything the
     * origin sends before a request is released and closes the connection.
     */
    static final class Unclaimed extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
            ctx.close();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
