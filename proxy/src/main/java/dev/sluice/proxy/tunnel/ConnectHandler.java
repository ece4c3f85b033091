package dev.sluice.proxy.tunnel;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.dial.DialFailure;
import dev.sluice.proxy.dial.Dialed;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.intercept.Interception;
import dev.sluice.rules.policy.InspectedHost;
import java.util.Optional;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.TunnelMode;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tunnel-setup phase of an allowed CONNECT: dials the target through the safe dialer, answers
 * {@code 200 Connection established}, then removes the HTTP handlers and itself and joins the two
 * channels with a pair of {@link TunnelRelay}s. Bytes the client sent before the 200 (an optimistic
 * ClientHello) are held and sent first. A blind tunnel's first client bytes pass a
 * {@link TunnelStartGate} before any goes upstream: an SNI that names neither the CONNECT host nor a
 * host allowed on its port closes the tunnel ({@code sni_mismatch}), as does a first flight that is
 * not TLS on a {@code tls_only} port ({@code not_http_or_tls}). A failed dial is answered (403 {@code address_class} /
 * {@code self_loop}, 502, 504) and the connection closes.
 */
public final class ConnectHandler extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(ConnectHandler.class);

    private final ProxyContext context;
    private final ArrayDeque<ByteBuf> early = new ArrayDeque<>();
    private @Nullable ConnectRequest request;
    private @Nullable Channel upstream;
    private @Nullable ByteCounter counter;
    private boolean downstreamInputShut;

    /** Names of the downstream handlers that the tunnel replaces. */
    private final String[] httpHandlers;

    /**
     * @param context the server's shared context
     * @param httpHandlers names of the downstream HTTP handlers to remove once the tunnel is up
     */
    public ConnectHandler(ProxyContext context, String... httpHandlers) {
        this.context = context;
        this.httpHandlers = httpHandlers.clone();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ConnectRequest connect) {
            start(ctx, connect);
        } else if (msg instanceof ByteBuf buf && request != null) {
            early.add(buf);
        } else {
            // The empty LastHttpContent that ends a CONNECT request, or anything before a CONNECT.
            ReferenceCountUtil.release(msg);
        }
    }

    private void start(ChannelHandlerContext ctx, ConnectRequest connect) {
        request = connect;
        Reads.setAutoRead(ctx.channel(), false);
        if (connect.decision().tunnelMode() == TunnelMode.INTERCEPT) {
            // The record says what the decision made of the tunnel, also when it is refused before the
            // interception starts: never "tunnel", which would read as a blind relay.
            connect.audit().tlsMode(dev.sluice.proxy.audit.TlsMode.INTERCEPT);
        }
        if (connect.decision().tunnelMode() == TunnelMode.INTERCEPT && context.interception() == null) {
            // Fail closed: an inspected host is never relayed blind.
            refuse(ctx, Decision.deny(Reason.INTERCEPTION_UNAVAILABLE, BuiltinRules.INSPECT),
                    "interception is not available");
            return;
        }
        ByteCounter counter = new ByteCounter();
        counter.attach(connect.audit(), connect.traffic());
        this.counter = counter;
        ChannelHandler init = new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast("bytes", counter);
            }
        };
        Future<Dialed> dial = context.dialer().dial(ctx.channel().eventLoop(), connect.policy(), connect.decision(),
                connect.target(), init);
        dial.addListener((Future<Dialed> f) -> onDialed(ctx, f));
    }

    private void onDialed(ChannelHandlerContext ctx, Future<Dialed> f) {
        AuditEvent audit = request.audit();
        if (!ctx.channel().isActive()) {
            if (f.isSuccess()) {
                f.getNow().channel().close();
            }
            audit.error("downstream closed before the tunnel opened");
            audit.emit();
            releaseEarly();
            return;
        }
        if (!f.isSuccess()) {
            Decision denial = f.cause() instanceof DialFailure failure
                    ? failure.decision() : Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.CONNECT);
            refuse(ctx, denial, f.cause().getMessage());
            return;
        }
        Dialed dialed = f.getNow();
        upstream = dialed.channel();
        audit.peerAddress(dialed.remote().getAddress().getHostAddress()).statusCode(200);
        ctx.writeAndFlush(Answers.connectEstablished(ctx.alloc())).addListener((ChannelFutureListener) written -> {
            if (!written.isSuccess()) {
                upstream.close();
                audit.error("could not answer the CONNECT");
                audit.emit();
                releaseEarly();
                ctx.close();
                return;
            }
            if (request.decision().tunnelMode() != TunnelMode.INTERCEPT) {
                joinChannels(ctx, audit);
                return;
            }
            Optional<InspectedHost> inspected = Optional.ofNullable(request.decision().inspected());
            if (inspected.isEmpty() || downstreamInputShut) {
                // The 200 is out, so the refusal is a closed tunnel with its record; never a blind relay.
                upstream.close();
                audit.decision(Decision.deny(Reason.INTERCEPTION_UNAVAILABLE, BuiltinRules.INSPECT))
                        .error(downstreamInputShut ? "downstream half-closed before its TLS handshake"
                                : "the host is not under inspect in this policy snapshot");
                audit.emit();
                releaseEarly();
                ctx.close();
                return;
            }
            intercept(ctx, inspected.get());
        });
    }

    /** Answers a refused CONNECT itself (its status from the reason), with the record, and closes. */
    private void refuse(ChannelHandlerContext ctx, Decision denial, String error) {
        AuditEvent audit = request.audit();
        audit.decision(denial)
                .statusCode(denial.reason().httpStatus()).error(error);
        audit.emit();
        releaseEarly();
        FullHttpResponse answer = Answers.refusal(ctx.alloc(), denial.reason(), denial.reasonText(), true,
                Answers.Refused.of(audit, denial.ruleId(), request.accept()));
        ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
    }

    private void intercept(ChannelHandlerContext ctx, InspectedHost inspected) {
        Channel downstream = ctx.channel();
        java.util.List<ByteBuf> bytes = new java.util.ArrayList<>(early);
        early.clear();
        ctx.pipeline().remove(this);
        Interception.start(context, downstream, upstream, counter, request.target(), request.policy(),
                request.extension(), inspected, request.audit(), request.traffic(), bytes,
                request.listener());
    }

    private void joinChannels(ChannelHandlerContext ctx, AuditEvent audit) {
        Channel downstream = ctx.channel();
        TunnelSession session = new TunnelSession(audit);
        downstream.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
        upstream.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
        upstream.pipeline().addLast("relay", new TunnelRelay(session, downstream, false));
        // The client's first bytes are held and decided (SNI against the CONNECT target, tls_only)
        // before any of them goes upstream; the origin's direction flows from the start.
        downstream.pipeline().addLast(START_GATE, new TunnelStartGate(request.policy(),
                request.policy().extension(request.extension()).orElse(null), request.target(), request.decision(),
                audit, upstream, request.policy().limits().maxHeaderBytes()));
        downstream.pipeline().addLast("relay", new TunnelRelay(session, upstream, true));
        for (String name : httpHandlers) {
            if (downstream.pipeline().get(name) != null) {
                downstream.pipeline().remove(name);
            }
        }
        downstream.pipeline().remove(this);
        if (!upstream.isActive()) {
            releaseEarly();
            downstream.close();
            return;
        }
        // Bytes sent right behind the CONNECT go first, through the gate like any other.
        while (!early.isEmpty()) {
            downstream.pipeline().fireChannelRead(early.poll());
        }
        downstream.pipeline().fireChannelReadComplete();
        if (downstreamInputShut && downstream.isActive()) {
            // The client sent FIN before the tunnel was up: pass it on after its early bytes.
            downstream.pipeline().fireUserEventTriggered(io.netty.channel.socket.ChannelInputShutdownEvent.INSTANCE);
        }
        Reads.setAutoRead(upstream, true);
        Reads.setAutoRead(downstream, true);
    }

    /** Pipeline name of the handler that holds a blind tunnel's first client bytes until decided. */
    public static final String START_GATE = "start-gate";

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof io.netty.handler.timeout.IdleStateEvent) {
            if (request != null) {
                request.audit().error("idle_timeout");
            }
            ctx.close();
            return;
        }
        if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
            downstreamInputShut = true;
            if (request == null) {
                ctx.close();
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        releaseEarly();
        if (upstream != null) {
            upstream.close();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("downstream {} failed before the tunnel opened: {}", ctx.channel().remoteAddress(), cause.toString());
        if (request != null) {
            request.audit().error("downstream error: " + cause.getClass().getSimpleName());
        }
        ctx.close();
    }

    private void releaseEarly() {
        while (!early.isEmpty()) {
            early.poll().release();
        }
    }
}
