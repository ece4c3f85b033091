package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.proxy.tls.InterceptionTls;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.request.ExplicitRequestHandler;
import dev.sluice.proxy.forward.HttpForwarder;
import dev.sluice.proxy.forward.H2Upstreams;
import dev.sluice.proxy.forward.UpstreamPool;
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
 *            (else close: sni_mismatch, or no_sni); ALPN offers h2 and http/1.1
 *   gate     InterceptGate: handshake failures and refusals end the tunnel with its audit record
 *   decoder, encoder, request (ExplicitRequestHandler with an InterceptFront),
 *   llm      LlmPhase: limits.token_budget, and the response's model and token usage
 *   redact   RedactionPhase: headers and streaming body through the redactor (redact: true)
 *   flags    RedFlagPhase: red_flags on the request body as sent (after redaction, before injection) and
 *            on the response
 *   capture  CapturePhase: the request body as sent (after redaction, before injection) and the response,
 *            for hosts under capture (sampled), to the data dir's captures/
 *   credentials CredentialPhase: placeholders swapped for real values where inject allows, else refused
 *   forward  HttpForwarder with TLS
 * </pre>
 * When the handshake chose {@code h2}, the HTTP/1.1 handlers give way to {@link H2Interception}: each
 * stream's child channel runs the same request, redact and forward phases (one audit record per
 * stream); the first stream adopts the connection the CONNECT dialled, whose TLS offers the origin h2
 * and http/1.1; when the origin chooses h2, later streams become streams of that connection
 * ({@link H2Upstreams}), otherwise they take a kept-alive connection from the downstream connection's
 * {@link UpstreamPool} or dial their own. An HTTP/1.1 client's upstream stays HTTP/1.1.
 * The upstream connection the CONNECT dialled (to a checked address) is adopted by the forwarder,
 * which adds TLS (PKIX, hostname, pins) and the HTTP codec. Each request inside is its own audit
 * record; the tunnel's record (handshake bytes, SNI, errors) is written when the connection closes.
 */
public final class Interception {

    private static final Logger log = LoggerFactory.getLogger(Interception.class);

    /** Pipeline name of the first-byte check. */
    static final String PEEK = "tls-peek";
    /** Idle upstream connections an HTTP/2 connection keeps for its next streams. */
    static final int H2_IDLE_UPSTREAMS = 32;

    /**
     * Adds LLM monitoring to an intercepted pipeline whose phases are installed: {@link LlmPhase} (token
     * budget, usage) right after the request phase, and {@link RedFlagPhase} right after redaction and
     * before credential injection, so it reads the body as the sandbox sent it (redacted) and never a
     * real injected credential; then {@link CapturePhase} (policy {@code capture}) in the same place, after
     * the red flags, so that what it copies is what goes upstream (placeholders, never injected values).
     */
    private static void addMonitoring(ProxyContext context, ChannelPipeline pipeline) {
        pipeline.addAfter(HttpPipeline.REQUEST, LlmPhase.NAME, new LlmPhase(context));
        String before = pipeline.get(HttpPipeline.CREDENTIALS) != null ? HttpPipeline.CREDENTIALS : HttpPipeline.FORWARD;
        pipeline.addBefore(before, RedFlagPhase.NAME, new RedFlagPhase(context));
        pipeline.addBefore(before, CapturePhase.NAME, new CapturePhase(context));
    }

    private Interception() {
    }

    /**
     * Replaces the HTTP handlers of {@code downstream} with the interception pipeline and replays the
     * bytes the client already sent. Call on the event loop, after the 200 was written.
     */
    public static void start(ProxyContext context, Channel downstream, Channel upstream, ByteCounter counter,
                             Target target, Policy policy, String extension, InspectedHost inspected,
                             AuditEvent tunnelAudit, TrafficMeter traffic, List<ByteBuf> early, Listener listener) {
        InterceptionTls tls = context.interception();
        tunnelAudit.tlsMode(TlsMode.INTERCEPT);
        counter.fallback(tunnelAudit, traffic);
        ChannelPipeline p = downstream.pipeline();
        for (String name : List.of(HttpPipeline.ENCODER, HttpPipeline.REQUEST, HttpPipeline.CREDENTIALS,
                HttpPipeline.FORWARD)) {
            if (p.get(name) != null) {
                p.remove(name);
            }
        }
        InterceptFront front = new InterceptFront(extension, target, listener);
        HttpForwarder forwarder = new HttpForwarder(context,
                tls::installUpstream);
        Gate gate = new Gate(tunnelAudit, context.metrics());
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
        // One per connection: its HTTP/2 streams run on its event loop and share what was found clean.
        CleanValues clean = new CleanValues();
        HttpPipeline.install(p, "gate", policy.limits(), new ExplicitRequestHandler(context, front),
                new RedactionPhase(inspected.redact(), clean),
                context.credentials() == null ? null : new CredentialPhase(context.credentials(), true), forwarder);
        addMonitoring(context, p);
        java.util.concurrent.atomic.AtomicReference<Channel> spare = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicBoolean h2Chosen = new java.util.concurrent.atomic.AtomicBoolean();
        gate.h2 = () -> {
            h2Chosen.set(true);
            for (String name : List.of(HttpPipeline.DECODER, HttpPipeline.ENCODER, HttpPipeline.REQUEST,
                    HttpPipeline.REDACT, HttpPipeline.CREDENTIALS, HttpPipeline.FORWARD, LlmPhase.NAME,
                    RedFlagPhase.NAME, CapturePhase.NAME)) {
                if (p.get(name) != null) {
                    p.remove(name);
                }
            }
            // The first stream adopts the connection the CONNECT dialled, whose handshake offers the origin
            // h2 and http/1.1. When the origin chooses h2, the later streams become streams of that
            // connection (H2Upstreams; a new one is dialled when it is full or gone); with http/1.1, a
            // later stream takes an idle kept-alive one from the pool (one finished by an earlier stream)
            // or dials its own: one HTTP/1.1 upstream connection per stream in flight, up to
            // H2_IDLE_UPSTREAMS kept idle.
            spare.set(upstream);
            UpstreamPool pool = new UpstreamPool(H2_IDLE_UPSTREAMS);
            H2Upstreams h2Upstreams = new H2Upstreams();
            downstream.closeFuture().addListener(f -> {
                pool.close();
                h2Upstreams.close();
            });
            H2Interception.install(p, "gate", policy.limits().maxHeaderBytes(),
                    (pipeline, after) -> {
                        HttpForwarder streamForwarder = new HttpForwarder(context, tls::installUpstream);
                        streamForwarder.pool(pool);
                        streamForwarder.h2Upstream(h2Upstreams, tls::installUpstreamOfferingH2);
                        HttpPipeline.installPhases(pipeline, after, new ExplicitRequestHandler(context, front),
                                new RedactionPhase(inspected.redact(), clean),
                                context.credentials() == null ? null
                                        : new CredentialPhase(context.credentials(), true), streamForwarder);
                        addMonitoring(context, pipeline);
                        Channel first = spare.getAndSet(null);
                        if (first != null && first.isActive()) {
                            streamForwarder.adopt(first, counter, target, policy);
                        }
                    },
                    () -> {
                        AuditEvent stream = new AuditEvent(context.audit(), context.clock())
                                .listener(listener)
                                .extension(extension)
                                .scheme("https")
                                .server(target.host(), target.port());
                        if (downstream.remoteAddress() instanceof java.net.InetSocketAddress client) {
                            stream.client(client);
                        }
                        front.describe(stream);
                        return stream;
                    }, tunnelAudit);
        };
        // The connection the CONNECT dialled goes to the HTTP/1.1 forwarder as soon as the ClientHello
        // shows that h2 will not be chosen (its TLS handshake then runs beside the client's); with h2, to
        // the first stream's forwarder.
        gate.http1 = () -> forwarder.adopt(upstream, counter, target, policy);
        downstream.closeFuture().addListener(f -> {
            if (h2Chosen.get()) {
                // With h2 the first stream's forwarder owns that connection (it closes it, or the pool
                // does, when the stream ends): closing it here would race the stream's own end and make
                // a stream cut by the client look like an upstream failure (502 upstream_connect_failed).
                Channel unused = spare.getAndSet(null);
                if (unused != null) {
                    unused.close();
                }
            } else {
                upstream.close();
            }
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
     * protocols but neither {@code h2} nor {@code http/1.1} gets the fatal {@code no_application_protocol}
     * alert and the tunnel ends with reason {@code no_application_protocol}; a ClientHello without ALPN,
     * or with {@code h2} or {@code http/1.1} among its protocols, goes on to the SNI check and the handshake.
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
                if (offered.isPresent() && !offered.get().contains(ApplicationProtocolNames.HTTP_1_1)
                        && !offered.get().contains(ApplicationProtocolNames.HTTP_2)) {
                    gate.refusal = Reason.NO_APPLICATION_PROTOCOL;
                    gate.detail = "ALPN: neither h2 nor http/1.1 in the offer " + printable(offered.get()) + " for " + host
                            + " (alert no_application_protocol)";
                    gate.alert = ctx.writeAndFlush(AlpnOffer.alert(ctx.alloc()));
                    return ctx.executor().newFailedFuture(new javax.net.ssl.SSLHandshakeException(
                            "no application protocol in common with the client's ALPN offer"));
                }
                if (offered.isEmpty() || !offered.get().contains(ApplicationProtocolNames.HTTP_2)) {
                    gate.placeUpstreamForHttp1();
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
    static final class Peek extends ChannelInboundHandlerAdapter {
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
        private final dev.sluice.proxy.metrics.SluiceMetrics metrics;
        volatile Reason refusal;
        volatile String sni;
        /** The audit text of a refusal that has more to say than its reason. */
        volatile String detail;
        /** The write of the alert that refused the ClientHello, if one was sent. */
        volatile io.netty.channel.ChannelFuture alert;
        /** Switches the connection to HTTP/2 when the handshake chose {@code h2}. */
        Runnable h2;
        /** Hands the CONNECT's upstream connection to the HTTP/1.1 forwarder; run once, when h2 is ruled out. */
        Runnable http1;
        private boolean upstreamPlaced;

        /** Runs {@link #http1} unless it already ran. */
        void placeUpstreamForHttp1() {
            if (!upstreamPlaced && http1 != null) {
                upstreamPlaced = true;
                http1.run();
            }
        }
        /** Application data decrypted before the handshake's event (none expected): replayed after it. */
        private final java.util.ArrayDeque<Object> early = new java.util.ArrayDeque<>();
        private boolean handshaken;

        Gate(AuditEvent tunnelAudit, dev.sluice.proxy.metrics.SluiceMetrics metrics) {
            this.tunnelAudit = tunnelAudit;
            this.metrics = metrics;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof SslHandshakeCompletionEvent handshake) {
                if (handshake.isSuccess()) {
                    if (sni != null) {
                        tunnelAudit.tlsSni(sni);
                    }
                    handshaken = true;
                    io.netty.handler.ssl.SslHandler ssl = ctx.pipeline().get(io.netty.handler.ssl.SslHandler.class);
                    if (metrics != null) {
                        metrics.downstreamHandshake(resumed(ssl));
                    }
                    if (h2 != null && ssl != null
                            && ApplicationProtocolNames.HTTP_2.equals(ssl.applicationProtocol())) {
                        upstreamPlaced = true;
                        h2.run();
                    } else {
                        placeUpstreamForHttp1();
                    }
                    List<Object> replay = new java.util.ArrayList<>(early);
                    early.clear();
                    ctx.pipeline().remove(this);
                    ctx.fireUserEventTriggered(evt);
                    for (Object msg : replay) {
                        ctx.fireChannelRead(msg);
                    }
                    return;
                } else {
                    fail(ctx, handshake.cause());
                    return;
                }
            }
            ctx.fireUserEventTriggered(evt);
        }

        /** Whether the finished handshake of {@code ssl} resumed a session; null when the provider does not tell (JDK). */
        private static Boolean resumed(io.netty.handler.ssl.SslHandler ssl) {
            if (ssl != null && ssl.engine() instanceof io.netty.handler.ssl.ReferenceCountedOpenSslEngine engine) {
                synchronized (engine) {
                    long pointer = engine.sslPointer();
                    return pointer == 0 ? null : io.netty.internal.tcnative.SSL.isSessionReused(pointer);
                }
            }
            return null;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (handshaken) {
                ctx.fireChannelRead(msg);
            } else {
                early.add(msg);
            }
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            while (!early.isEmpty()) {
                ReferenceCountUtil.release(early.poll());
            }
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
