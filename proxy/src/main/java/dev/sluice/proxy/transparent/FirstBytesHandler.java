package dev.sluice.proxy.transparent;

import dev.sluice.proxy.core.SourceIdentity;
import dev.sluice.proxy.exchange.InterceptionPath;
import dev.sluice.proxy.tls.ClientHelloParser;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.request.ExplicitRequestHandler;
import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.proxy.http.StrictRequestDecoder;
import dev.sluice.proxy.forward.HttpForwarder;
import dev.sluice.proxy.core.Draining;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.core.Reads;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.Optional;

/**
 * The first phase of a transparent connection (design.md step 1): reads the client's first bytes
 * without consuming them, at most {@code limits.max_header_bytes} of them, and decides what they are.
 * Before any byte, it identifies the client by source address ({@link SourceIdentity}) and reads the
 * original destination ({@link OriginalDestination}).
 *
 * <ul>
 *   <li>A TLS handshake record (first byte 22): bytes are gathered until {@link ClientHelloParser} has
 *       a complete ClientHello; then this handler is replaced by a {@link TransparentTunnelHandler},
 *       handed the bytes and the SNI (or none).</li>
 *   <li>An HTTP/1.x request (an upper-case method token and a space): this handler is replaced by the
 *       explicit listener's HTTP handlers, with a {@link TransparentFront}, and the bytes are passed
 *       on to the decoder.</li>
 * </ul>
 *
 * <p>It closes the connection by itself, with one audit record ({@code listener=transparent},
 * {@code server.address}/{@code server.port} = the original destination), in these cases:
 * <table>
 *   <caption>Refusals of the peek phase</caption>
 *   <tr><td>unknown_extension</td><td>no {@code sources} prefix matches and there is no {@code default}</td></tr>
 *   <tr><td>self_loop</td><td>the client is one of Sluice's own upstream connections, sent back in
 *       (checked at accept and again on the first bytes)</td></tr>
 *   <tr><td>not_http_or_tls</td><td>neither TLS nor HTTP, a malformed ClientHello, or the client ended
 *       (FIN, reset) before the first bytes were complete</td></tr>
 *   <tr><td>header_too_large</td><td>the ClientHello does not fit in {@code limits.max_header_bytes}</td></tr>
 *   <tr><td>header_timeout</td><td>no complete ClientHello or request head within {@code limits.header_timeout}</td></tr>
 * </table>
 */
final class FirstBytesHandler extends ChannelInboundHandlerAdapter {

    /** Longest method token accepted while telling HTTP from other protocols. */
    static final int MAX_METHOD_CHARS = 20;
    /** Rule id of refusals by the peek phase. */
    static final String PEEK_RULE = BuiltinRules.TRANSPARENT_PEEK;

    private final ProxyContext context;
    private final InterceptionPath interception;
    private final int maxBytes;
    private CompositeByteBuf cumulation;
    /** Bytes needed before the ClientHello parser can progress (its last {@code needBytes}). */
    private int needBytes;
    private AuditEvent audit;
    private Extension extension;
    private InetSocketAddress original;
    private boolean started;
    private boolean done;

    FirstBytesHandler(ProxyContext context, InterceptionPath interception, int maxBytes) {
        this.context = context;
        this.interception = interception;
        this.maxBytes = maxBytes;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        if (ctx.channel().isActive()) {
            start(ctx);
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        start(ctx);
        ctx.fireChannelActive();
    }

    private void start(ChannelHandlerContext ctx) {
        if (started) {
            return;
        }
        started = true;
        InetSocketAddress client = (InetSocketAddress) ctx.channel().remoteAddress();
        original = OriginalDestination.of(ctx.channel());
        audit = new AuditEvent(context.audit(), context.clock())
                .listener(TransparentFront.LISTENER)
                .client(client)
                .server(original.getAddress().getHostAddress(), original.getPort());
        if (isOwnUpstream(ctx)) {
            return;
        }
        Policy policy = context.policies().current();
        Optional<Extension> identified = SourceIdentity.identify(policy, client.getAddress());
        if (identified.isEmpty()) {
            refuse(ctx, Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.SOURCES), "no extension has this source address");
            return;
        }
        extension = identified.get();
        audit.extension(extension.name());
    }

    /** Refuses the connection ({@code self_loop}) when it is one of Sluice's own upstream sockets. */
    private boolean isOwnUpstream(ChannelHandlerContext ctx) {
        if (!context.dialer().isOwnUpstream((InetSocketAddress) ctx.channel().remoteAddress())) {
            return false;
        }
        audit.extension(null);
        refuse(ctx, Decision.deny(Reason.SELF_LOOP, Decider.SELF_RULE),
                "one of Sluice's own upstream connections was sent back to the transparent listener");
        return true;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (done || !(msg instanceof ByteBuf buf)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (cumulation == null) {
            // Checked again with the first bytes: the dialer registers an upstream socket before it
            // sends anything on it, so by now a redirected one of ours is always known (at accept
            // time, the dialling thread may not have registered it yet).
            if (isOwnUpstream(ctx)) {
                buf.release();
                return;
            }
            cumulation = ctx.alloc().compositeBuffer(64);
        }
        cumulation.addComponent(true, buf);
        classify(ctx);
    }

    private void classify(ChannelHandlerContext ctx) {
        if (!cumulation.isReadable()) {
            return;
        }
        int first = cumulation.getUnsignedByte(cumulation.readerIndex());
        if (ClientHelloParser.looksLikeTls(first)) {
            if (cumulation.readableBytes() < needBytes) {
                return;
            }
            ClientHelloParser.Result result = ClientHelloParser.parse(cumulation, maxBytes);
            switch (result.kind()) {
                case NEED_MORE -> needBytes = result.needBytes();
                case SNI, NO_SNI -> toTunnel(ctx, result.serverName());
                case TOO_LARGE -> refuse(ctx, Decision.deny(Reason.HEADER_TOO_LARGE, BuiltinRules.MAX_HEADER_BYTES),
                        "ClientHello over " + maxBytes + " bytes");
                case NOT_TLS -> refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE), "not a TLS handshake");
                case MALFORMED -> refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE),
                        "malformed ClientHello: " + result.detail());
                default -> throw new IllegalStateException("kind: " + result.kind());
            }
            return;
        }
        switch (httpRequestLine(cumulation)) {
            case 1 -> toHttp(ctx);
            case 0 -> {
                // wait for more bytes
            }
            default -> refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE), "neither TLS nor HTTP");
        }
    }

    /**
     * Answers whether {@code in} starts like an HTTP/1.x request line (RFC 9112 section 3): 1 when it
     * starts with 1..{@value #MAX_METHOD_CHARS} upper-case letters and a space, 0 when the bytes so far
     * could still become that, -1 otherwise.
     */
    static int httpRequestLine(ByteBuf in) {
        int n = Math.min(in.readableBytes(), MAX_METHOD_CHARS + 1);
        for (int i = 0; i < n; i++) {
            int c = in.getUnsignedByte(in.readerIndex() + i);
            if (c == ' ') {
                return i > 0 ? 1 : -1;
            }
            if (c < 'A' || c > 'Z') {
                return -1;
            }
        }
        return n > MAX_METHOD_CHARS ? -1 : 0;
    }

    private void toTunnel(ChannelHandlerContext ctx, String serverName) {
        done = true;
        ChannelPipeline pipeline = ctx.pipeline();
        if (pipeline.get(HttpPipeline.HEADER_DEADLINE) != null) {
            pipeline.remove(HttpPipeline.HEADER_DEADLINE);
        }
        Reads.setAutoRead(ctx.channel(), false);
        ByteBuf hello = cumulation;
        cumulation = null;
        pipeline.addAfter(ctx.name(), TransparentChannelInitializer.TUNNEL,
                new TransparentTunnelHandler(context, interception));
        ctx.fireChannelRead(new TransparentTunnelHandler.Start(hello, serverName, original, extension, audit));
        pipeline.remove(this);
    }

    private void toHttp(ChannelHandlerContext ctx) {
        done = true;
        Policy policy = context.policies().current();
        TransparentFront front = new TransparentFront(
                ((InetSocketAddress) ctx.channel().remoteAddress()).getAddress(), original.getPort());
        ChannelPipeline pipeline = ctx.pipeline();
        HttpPipeline.install(pipeline, ctx.name(), policy.limits(), new ExplicitRequestHandler(context, front), null,
                context.credentials() == null ? null : new dev.sluice.proxy.intercept.CredentialPhase(
                        context.credentials(), false),
                new HttpForwarder(context));
        ByteBuf bytes = cumulation;
        cumulation = null;
        ctx.fireChannelRead(bytes);
        pipeline.remove(this);
    }

    private void refuse(ChannelHandlerContext ctx, Decision decision, String detail) {
        done = true;
        release();
        audit.decision(decision).error(detail);
        audit.emit();
        ctx.close();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (!done) {
            if (evt instanceof HeaderDeadline.HeaderTimeoutEvent) {
                refuse(ctx, Decision.deny(Reason.HEADER_TIMEOUT, BuiltinRules.HEADER_TIMEOUT),
                        "no complete ClientHello or request head within "
                                + context.policies().current().limits().headerTimeout().toMillis() + " ms");
                return;
            }
            if (evt instanceof IdleStateEvent) {
                refuse(ctx, Decision.deny(Reason.IDLE_TIMEOUT, BuiltinRules.IDLE_TIMEOUT), "idle_timeout");
                return;
            }
            if (evt instanceof ChannelInputShutdownEvent || evt instanceof Draining) {
                refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE), (evt instanceof Draining
                        ? "shutting down" : "client closed") + " after " + readBytes() + " bytes");
                return;
            }
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (!done && started) {
            refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE),
                    "connection ended after " + readBytes() + " bytes");
        }
        release();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!done && started) {
            refuse(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, PEEK_RULE), "downstream error: "
                    + cause.getClass().getSimpleName());
            return;
        }
        ctx.close();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    private int readBytes() {
        return cumulation == null ? 0 : cumulation.readableBytes();
    }

    private void release() {
        if (cumulation != null) {
            cumulation.release();
            cumulation = null;
        }
    }
}
