package dev.sluice.proxy.tunnel;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.tls.ClientHelloParser;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;

/**
 * The first bytes of a blind CONNECT tunnel, client to origin, held until they are decided: sits on
 * the client's channel in front of its {@link TunnelRelay} and peeks the ClientHello
 * ({@link ClientHelloParser}) without consuming or copying it. {@link Decider#decideTunnelStart}
 * decides on what it found (the SNI against the CONNECT target, {@code tls_only}); when the tunnel
 * stands, the held buffers go on to the relay as they are and this handler steps aside; otherwise
 * nothing of them goes upstream and both channels close, the tunnel's one audit record carrying the
 * decision ({@code sni_mismatch}, {@code no_sni}, {@code not_http_or_tls}, {@code header_too_large})
 * and {@code tls.sni}.
 *
 * <p>The origin-to-client direction is not held (a server that speaks first still can). A ClientHello
 * usually arrives in the client's first read; one that spans reads costs one more read per TLS record
 * (the parser says how many bytes it needs). At most {@code maxBytes} are held: a larger ClientHello is
 * refused ({@code header_too_large}). A malformed ClientHello (it starts like TLS, then breaks a rule)
 * is refused as {@code not_http_or_tls} on every port (fail closed: a peer could parse it otherwise),
 * and so is a client that ends (FIN) in the middle of one.
 */
final class TunnelStartGate extends ChannelInboundHandlerAdapter {

    /** Rule id of refusals of a ClientHello that could not be read. */
    static final String CLIENT_HELLO_RULE = BuiltinRules.TLS_CLIENT_HELLO;

    private final Policy policy;
    private final Extension extension;
    private final Target target;
    private final Decision tunnel;
    private final AuditEvent audit;
    private final Channel upstream;
    private final int maxBytes;
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
    private int heldBytes;
    private int needBytes = 1;
    private boolean decided;

    /**
     * @param extension the identified extension, or null when it is no longer in the policy (the
     *     tunnel is then refused)
     * @param tunnel the tunnel's decision ({@link dev.sluice.rules.decision.TunnelMode#BLIND})
     * @param maxBytes the most bytes held while waiting for a complete ClientHello (&gt; 0)
     */
    TunnelStartGate(Policy policy, Extension extension, Target target, Decision tunnel, AuditEvent audit,
                    Channel upstream, int maxBytes) {
        this.policy = policy;
        this.extension = extension;
        this.target = target;
        this.tunnel = tunnel;
        this.audit = audit;
        this.upstream = upstream;
        this.maxBytes = maxBytes;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (decided || !(msg instanceof ByteBuf buf)) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (!buf.isReadable()) {
            buf.release();
            return;
        }
        held.add(buf);
        heldBytes += buf.readableBytes();
        if (heldBytes < needBytes) {
            return;
        }
        ClientHelloParser.Result result = parseHeld();
        switch (result.kind()) {
            case NEED_MORE -> needBytes = result.needBytes();
            case SNI -> decide(ctx, start(true, result.serverName()), result.serverName(), null);
            case NO_SNI -> decide(ctx, start(true, null), null, null);
            case NOT_TLS -> decide(ctx, start(false, null), null, "first bytes are not a TLS ClientHello");
            case MALFORMED -> decide(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, CLIENT_HELLO_RULE), null,
                    "malformed ClientHello: " + result.detail());
            case TOO_LARGE -> decide(ctx, Decision.deny(Reason.HEADER_TOO_LARGE, CLIENT_HELLO_RULE), null,
                    "ClientHello over " + maxBytes + " bytes");
            default -> throw new IllegalStateException("kind: " + result.kind());
        }
    }

    /** Asks the rules; an extension gone from the snapshot (cannot happen: it decided) is refused. */
    private Decision start(boolean tls, String sni) {
        return extension == null ? Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.AUTH)
                : Decider.decideTunnelStart(policy, extension, target, tunnel, tls, sni);
    }

    /** Parses the held bytes in place: one buffer as is, several through a composite view (no copy). */
    private ClientHelloParser.Result parseHeld() {
        if (held.size() == 1) {
            return ClientHelloParser.parse(held.peek(), maxBytes);
        }
        CompositeByteBuf view = held.peek().alloc().compositeBuffer(held.size());
        try {
            for (ByteBuf b : held) {
                view.addComponent(true, b.retainedDuplicate());
            }
            return ClientHelloParser.parse(view, maxBytes);
        } finally {
            view.release();
        }
    }

    private void decide(ChannelHandlerContext ctx, Decision decision, String sni, String detail) {
        decided = true;
        if (sni != null) {
            audit.tlsSni(sni.length() > 253 ? sni.substring(0, 253) : sni);
        }
        if (decision != tunnel) {
            audit.decision(decision);
        }
        if (!decision.permits()) {
            audit.error(detail != null ? detail : errorFor(decision.reason()));
            release();
            upstream.close();
            ctx.close();
            return;
        }
        if (detail != null && decision != tunnel) {
            audit.error(detail);
        }
        while (!held.isEmpty()) {
            ctx.fireChannelRead(held.poll());
        }
        ctx.pipeline().remove(this);
    }

    private static String errorFor(Reason reason) {
        return switch (reason) {
            case SNI_MISMATCH -> "SNI names neither the CONNECT host nor a host allowed on its port";
            case NO_SNI -> "no SNI in the ClientHello for a named CONNECT host";
            case NOT_HTTP_OR_TLS -> "first bytes are not a TLS ClientHello on a tls_only port";
            default -> reason.label();
        };
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (!decided && evt instanceof ChannelInputShutdownEvent && heldBytes > 0) {
            // The client ended in the middle of its first flight: nothing of it goes upstream.
            decide(ctx, Decision.deny(Reason.NOT_HTTP_OR_TLS, CLIENT_HELLO_RULE), null,
                    "client ended before its ClientHello was complete");
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        release();
        ctx.fireChannelInactive();
    }

    private void release() {
        while (!held.isEmpty()) {
            ReferenceCountUtil.release(held.poll());
        }
        heldBytes = 0;
    }
}
