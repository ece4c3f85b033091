package dev.sluice.proxy.intercept;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.proxy.tls.InterceptionTls;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.request.ExplicitRequestHandler;
import dev.sluice.proxy.forward.HttpForwarder;
import dev.sluice.proxy.metrics.TrafficMeter;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.core.Reads;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SniHandler;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Promise;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Interception of an allowed CONNECT to an inspected host (design.md step 6). After the 200, the
 * downstream channel becomes:
 * <pre>
 *   tls-peek Peek: the first byte must start a TLS handshake record, else close (not_http_or_tls)
 *   sni      SniHandler → SslHandler with the host's leaf; the SNI must equal the CONNECT host
 *            (else close: sni_mismatch, or no_sni); ALPN offers http/1.1 only
 *   gate     InterceptGate: handshake failures and refusals end the tunnel with its audit record
 *   decoder, encoder, request (ExplicitRequestHandler with an InterceptFront),
 *   llm      LlmPhase: limits.token_budget, and the response's model and token usage
 *   redact   RedactionPhase: headers and streaming body through the redactor (redact: true)
 *   flags    RedFlagPhase: red_flags on the request body as sent and on the response
 *   forward  HttpForwarder with TLS
 * </pre>
 * The upstream connection the CONNECT dialled (to a checked address) is adopted by the forwarder,
 * which adds TLS (PKIX, hostname, pins) and the HTTP codec. Each request inside is its own audit
 * record; the tunnel's record (handshake bytes, SNI, errors) is written when the connection closes.
 */
public final class Interception {

    private static final Logger log = LoggerFactory.getLogger(Interception.class);

    /** Pipeline name of the first-byte check. */
    static final String PEEK = "tls-peek";

    private Interception() {
    }

    /**
     * Replaces the HTTP handlers of {@code downstream} with the interception pipeline and replays the
     * bytes the client already sent. Call on the event loop, after the 200 was written.
     */
    public static void start(ProxyContext context, Channel downstream, Channel upstream, ByteCounter counter,
                             Target target, Policy policy, String extension, InspectedHost inspected,
                             AuditEvent tunnelAudit, TrafficMeter traffic, List<ByteBuf> early, String listener) {
        InterceptionTls tls = context.interception();
        tunnelAudit.tlsMode("intercept");
        counter.fallback(tunnelAudit, traffic);
        ChannelPipeline p = downstream.pipeline();
        for (String name : List.of(HttpPipeline.ENCODER, HttpPipeline.REQUEST, HttpPipeline.FORWARD)) {
            if (p.get(name) != null) {
                p.remove(name);
            }
        }
        InterceptFront front = new InterceptFront(extension, target, listener);
        HttpForwarder forwarder = new HttpForwarder(context,
                tls::installUpstream);
        Gate gate = new Gate(tunnelAudit);
        String anchor = p.get(HttpPipeline.HEADER_DEADLINE) != null ? HttpPipeline.HEADER_DEADLINE : null;
        ChannelInboundHandlerAdapter peek = new Peek(tunnelAudit);
        SniHandler sni = new InterceptSni((String hostname, Promise<SslContext> promise) ->
                mapSni(tls, target, hostname, gate, promise), gate, target.host());
        if (anchor != null) {
            p.addAfter(anchor, PEEK, peek);
        } else {
            p.addFirst(PEEK, peek);
        }
        p.addAfter(PEEK, "sni", sni);
        p.addAfter("sni", "gate", gate);
        HttpPipeline.install(p, "gate", policy.limits(), new ExplicitRequestHandler(context, front),
                new RedactionPhase(inspected.redact()), forwarder);
        p.addAfter(HttpPipeline.REQUEST, LlmPhase.NAME, new LlmPhase(context));
        p.addBefore(HttpPipeline.FORWARD, RedFlagPhase.NAME, new RedFlagPhase(context));
        forwarder.adopt(upstream, counter, target, policy);
        downstream.closeFuture().addListener(f -> {
            upstream.close();
            tunnelAudit.emit();
        });
        for (ByteBuf buf : early) {
            p.fireChannelRead(buf);
        }
        Reads.setAutoRead(downstream, true);
    }

    private static Promise<SslContext> mapSni(InterceptionTls tls, Target target, String hostname, Gate gate,
                                              Promise<SslContext> promise) {
        if (hostname == null) {
            gate.refusal = Reason.NO_SNI;
            return promise.setFailure(new IllegalStateException("no SNI in the ClientHello"));
        }
        String sni;
        try {
            sni = TargetParser.canonicalHost(hostname, target.port()).host();
        } catch (MalformedTargetException e) {
            sni = hostname;
        }
        if (!sni.equals(target.host())) {
            gate.refusal = Reason.SNI_MISMATCH;
            gate.sni = hostname;
            return promise.setFailure(new IllegalStateException("SNI " + hostname + " is not the CONNECT host"));
        }
        gate.sni = hostname;
        try {
            tls.serverContext(target.host()).whenComplete((context, error) -> {
                if (error == null) {
                    promise.trySuccess(context);
                } else {
                    gate.refusal = Reason.INTERCEPTION_UNAVAILABLE;
                    promise.tryFailure(error);
                }
            });
        } catch (RuntimeException e) {
            // For example the issuing executor refused the task (shutting down): refuse, never relay blind.
            gate.refusal = Reason.INTERCEPTION_UNAVAILABLE;
            promise.tryFailure(e);
        }
        return promise;
    }

    /**
     * The SNI step, which first reads the ClientHello's ALPN offer (RFC 7301): a client that offers
     * protocols but not {@code http/1.1} (an h2-only client) gets the fatal {@code no_application_protocol}
     * alert and the tunnel ends with reason {@code no_application_protocol}; a ClientHello without ALPN,
     * or with {@code http/1.1} among its protocols, goes on to the SNI check and the handshake.
     */
    private static final class InterceptSni extends SniHandler {
        private final Gate gate;
        private final String host;

        InterceptSni(io.netty.util.AsyncMapping<String, SslContext> mapping, Gate gate, String host) {
            super(mapping);
            this.gate = gate;
            this.host = host;
        }

        @Override
        protected io.netty.util.concurrent.Future<SslContext> lookup(ChannelHandlerContext ctx, ByteBuf clientHello)
                throws Exception {
            if (clientHello != null) {
                java.util.Optional<List<String>> offered = AlpnOffer.offered(clientHello);
                if (offered.isPresent() && !offered.get().contains(ApplicationProtocolNames.HTTP_1_1)) {
                    gate.refusal = Reason.NO_APPLICATION_PROTOCOL;
                    gate.detail = "ALPN: no http/1.1 in the offer " + printable(offered.get()) + " for " + host
                            + " (alert no_application_protocol)";
                    gate.alert = ctx.writeAndFlush(AlpnOffer.alert(ctx.alloc()));
                    return ctx.executor().newFailedFuture(new javax.net.ssl.SSLHandshakeException(
                            "no application protocol in common with the client's ALPN offer"));
                }
            }
            return super.lookup(ctx, clientHello);
        }

        /** At most 4 names of at most 16 characters, non-printable bytes as '?': bounded audit text. */
        private static String printable(List<String> names) {
            StringBuilder out = new StringBuilder("[");
            for (int i = 0; i < names.size() && i < 4; i++) {
                String name = names.get(i);
                if (i > 0) {
                    out.append(", ");
                }
                for (int c = 0; c < name.length() && c < 16; c++) {
                    char ch = name.charAt(c);
                    out.append(ch >= 0x21 && ch < 0x7f ? ch : '?');
                }
            }
            return out.append(names.size() > 4 ? ", ...]" : "]").toString();
        }
    }

    /** Refuses a tunnel whose first bytes are not a TLS handshake record (RFC 8446 section 5.1, type 22). */
    private static final class Peek extends ChannelInboundHandlerAdapter {
        private static final byte HANDSHAKE = 22;
        private final AuditEvent tunnelAudit;

        Peek(AuditEvent tunnelAudit) {
            this.tunnelAudit = tunnelAudit;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf buf && buf.isReadable()) {
                if (buf.getByte(buf.readerIndex()) != HANDSHAKE) {
                    ReferenceCountUtil.release(msg);
                    tunnelAudit.decision(Decision.deny(Reason.NOT_HTTP_OR_TLS, BuiltinRules.INSPECT))
                            .error("not TLS in a tunnel to an inspected host");
                    ctx.close();
                    return;
                }
                ctx.pipeline().remove(this);
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** Ends the tunnel, with its audit record, when the SNI is refused or a TLS handshake fails. */
    private static final class Gate extends ChannelInboundHandlerAdapter {
        private final AuditEvent tunnelAudit;
        volatile Reason refusal;
        volatile String sni;
        /** The audit text of a refusal that has more to say than its reason. */
        volatile String detail;
        /** The write of the alert that refused the ClientHello, if one was sent. */
        volatile io.netty.channel.ChannelFuture alert;

        Gate(AuditEvent tunnelAudit) {
            this.tunnelAudit = tunnelAudit;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof SslHandshakeCompletionEvent handshake) {
                if (handshake.isSuccess()) {
                    if (sni != null) {
                        tunnelAudit.tlsSni(sni);
                    }
                    ctx.pipeline().remove(this);
                } else {
                    fail(ctx, handshake.cause());
                    return;
                }
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(ctx, cause);
        }

        private void fail(ChannelHandlerContext ctx, Throwable cause) {
            Reason reason = refusal;
            if (reason != null) {
                tunnelAudit.decision(Decision.deny(reason, BuiltinRules.INSPECT));
                if (sni != null) {
                    tunnelAudit.tlsSni(sni.length() > 253 ? sni.substring(0, 253) : sni);
                }
                tunnelAudit.error(detail != null ? detail : switch (reason) {
                    case NO_SNI -> "no SNI in the ClientHello";
                    case SNI_MISMATCH -> "SNI does not name the CONNECT host";
                    default -> "no leaf certificate for the host: " + cause.getClass().getSimpleName();
                });
            } else {
                tunnelAudit.error("downstream TLS: " + cause.getClass().getSimpleName());
                log.debug("interception of {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
            }
            io.netty.channel.ChannelFuture written = alert;
            if (written != null) {
                // Close once the alert is out, so that the client reads it rather than a reset.
                written.addListener(f -> ctx.close());
            } else {
                ctx.close();
            }
        }
    }
}
