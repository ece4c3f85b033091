package dev.sluice.proxy.transparent;

import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.exchange.InterceptionPath;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.dial.DialFailure;
import dev.sluice.proxy.dial.Dialed;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.metrics.TrafficMeter;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.request.Refusal;
import dev.sluice.proxy.request.RequestAdmission;
import dev.sluice.proxy.tunnel.Tunnels;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.TunnelMode;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;

/**
 * The TLS phase of a transparent connection (design.md steps 3–6): canonicalises the SNI
 * ({@link TargetParser#canonicalHost}) on the original destination port, asks {@link Decider#decide}
 * (no request is visible: tunnel rules), then either hands the connection to the
 * {@link InterceptionPath} (inspected hosts) or dials through {@code UpstreamDialer} — which checks the
 * resolved addresses and connects to exactly the checked one — sends the ClientHello and everything
 * after it, and joins the two channels into a blind tunnel ({@link Tunnels#join}).
 *
 * <p>Without an SNI the target is the original destination address itself: a {@code cidr} allow rule
 * can allow it; otherwise the reason is {@code no_sni} (a rule miss: {@code would_deny} in report mode).
 *
 * <p>Refusals close the connection (there is no HTTP to answer with), each with one audit record:
 * {@code malformed_target} (an SNI with no canonical form), the decision's reason, {@code no_sni},
 * {@code audit_unavailable}, {@code connection_limit}, and the dial's {@code address_class},
 * {@code self_loop}, {@code dns_failure}, {@code upstream_connect_failed}, {@code upstream_timeout}.
 */
final class TransparentTunnelHandler extends ChannelInboundHandlerAdapter {

    /**
     * What the peek phase found, passed to this handler once.
     *
     * @param hello the bytes read so far, ClientHello first (ownership passes)
     * @param serverName the SNI as sent, or null
     * @param original the original destination
     * @param extension the identified extension
     * @param audit the connection's audit record
     */
    record Start(ByteBuf hello, String serverName, InetSocketAddress original, Extension extension, AuditEvent audit) {
    }

    private final ProxyContext context;
    private final InterceptionPath interception;
    private final ArrayDeque<ByteBuf> early = new ArrayDeque<>();
    private ByteBuf hello;
    private AuditEvent audit;
    private boolean inputShut;

    TransparentTunnelHandler(ProxyContext context, InterceptionPath interception) {
        this.context = context;
        this.interception = interception;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Start start) {
            begin(ctx, start);
        } else if (msg instanceof ByteBuf buf && audit != null && !audit.isEmitted()) {
            early.add(buf);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    private void begin(ChannelHandlerContext ctx, Start start) {
        hello = start.hello();
        audit = start.audit().scheme("https").tlsMode(TlsMode.TUNNEL);
        Policy policy = context.policies().current();
        Extension extension = start.extension();
        int port = start.original().getPort();
        Target target;
        try {
            if (start.serverName() != null) {
                audit.tlsSni(start.serverName());
                target = TargetParser.canonicalHost(start.serverName(), port);
            } else {
                target = TargetParser.canonicalHost(start.original().getAddress().getHostAddress(), port);
            }
        } catch (MalformedTargetException e) {
            refuse(ctx, Decision.deny(Reason.MALFORMED_TARGET, BuiltinRules.TLS_SNI), e.getMessage());
            return;
        }
        audit.server(target.host(), target.port());
        // Rules decide what the connection becomes (blind or intercepted); without SNI only a cidr rule
        // for the original destination allows it.
        Decision decision = start.serverName() != null ? Decider.decideTunnel(policy, extension, target)
                : Decider.decideTunnelWithoutSni(policy, extension, target);
        audit.decision(decision);
        if (!decision.permits()) {
            refuse(ctx, null, null);
            return;
        }
        // The same admission as a request's: the audit log can write, the connection cap (the slot is
        // released when the connection closes), the egress budget.
        RequestAdmission admission = new RequestAdmission(context, TransparentFront.LISTENER);
        Refusal refused = admission.auditHealth();
        if (refused == null) {
            refused = admission.admit(ctx.channel(), extension, policy, true);
        }
        if (refused != null) {
            refuse(ctx, refused.decision(), refused.detail());
            return;
        }
        TrafficMeter traffic = context.traffic(policy, extension, decision);
        if (decision.tunnelMode() == TunnelMode.INTERCEPT) {
            if (!interception.available()) {
                // Fail closed: an inspected host is never relayed blind.
                refuse(ctx, Decision.deny(Reason.INTERCEPTION_UNAVAILABLE, BuiltinRules.INSPECT),
                        "interception is not available on this listener");
                return;
            }
            ByteBuf bytes = takeBytes(ctx);
            ctx.pipeline().remove(this);
            interception.intercept(ctx, new ConnectRequest(target, decision, policy, audit, traffic, extension.name(),
                    TransparentFront.LISTENER), bytes);
            return;
        }
        ByteCounter counter = new ByteCounter();
        counter.attach(audit, traffic);
        ChannelHandler init = new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast("bytes", counter);
            }
        };
        Future<Dialed> dial = context.dialer().dial(ctx.channel().eventLoop(), policy, decision, target, init);
        dial.addListener((Future<Dialed> f) -> onDialed(ctx, f));
    }

    private void onDialed(ChannelHandlerContext ctx, Future<Dialed> f) {
        if (!ctx.channel().isActive()) {
            if (f.isSuccess()) {
                f.getNow().channel().close();
            }
            audit.error("downstream closed before the tunnel opened");
            audit.emit();
            release();
            return;
        }
        if (!f.isSuccess()) {
            Decision denial = f.cause() instanceof DialFailure failure
                    ? failure.decision() : Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.CONNECT);
            refuse(ctx, denial, f.cause().getMessage());
            return;
        }
        Dialed dialed = f.getNow();
        Channel upstream = dialed.channel();
        audit.peerAddress(dialed.remote().getAddress().getHostAddress());
        upstream.writeAndFlush(takeBytes(ctx));
        Channel downstream = ctx.channel();
        boolean finEarly = inputShut;
        ctx.pipeline().remove(this);
        Tunnels.join(downstream, upstream, audit);
        if (finEarly) {
            // The client sent FIN before the tunnel was up: the relay passes it on after the bytes.
            downstream.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        }
    }

    /** Returns the ClientHello and every byte after it, as one buffer (ownership passes). */
    private ByteBuf takeBytes(ChannelHandlerContext ctx) {
        ByteBuf all = hello;
        hello = null;
        if (!early.isEmpty()) {
            var composite = ctx.alloc().compositeBuffer(early.size() + 1);
            composite.addComponent(true, all);
            while (!early.isEmpty()) {
                composite.addComponent(true, early.poll());
            }
            all = composite;
        }
        return all;
    }

    /** Closes the connection with one audit record; {@code denial} (when non-null) replaces the decision. */
    private void refuse(ChannelHandlerContext ctx, Decision denial, String detail) {
        if (denial != null) {
            audit.decision(denial);
        }
        if (detail != null) {
            audit.error(detail);
        }
        audit.emit();
        release();
        ctx.close();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent) {
            if (audit != null) {
                audit.error("idle_timeout");
            }
            ctx.close();
            return;
        }
        if (evt instanceof ChannelInputShutdownEvent) {
            inputShut = true;
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        // The dial's listener writes the record (it sees the channel inactive); here only buffers go.
        release();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (audit != null) {
            audit.error("downstream error: " + cause.getClass().getSimpleName());
        }
        ctx.close();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    private void release() {
        if (hello != null) {
            hello.release();
            hello = null;
        }
        while (!early.isEmpty()) {
            early.poll().release();
        }
    }
}
