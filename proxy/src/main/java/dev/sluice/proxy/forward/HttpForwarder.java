package dev.sluice.proxy.forward;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.exchange.ExchangeControl;

import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.dial.DialFailure;
import dev.sluice.proxy.dial.Dialed;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.proxy.tls.UpstreamTls;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.dial.UpstreamKind;
import dev.sluice.rules.target.Target;
import dev.sluice.proxy.core.Draining;
import io.netty.handler.timeout.IdleStateEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Policy;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The forwarding phase for plain HTTP on one downstream connection: takes each request from the client
 * side, dials (through the safe dialer) or reuses the upstream connection, and streams the request body
 * up as {@link HttpContent} chunks (never buffering a whole body); its {@link ResponseRelay} streams the
 * response down the same way and writes one audit record per exchange. Everything below is what the
 * phase as a whole does.
 *
 * <p>Connection management: an upstream connection is kept after an exchange when both the origin
 * and the request allow keep-alive, and reused for the next request on the same downstream
 * connection to the same target under the same policy snapshot; any other request closes it and
 * dials anew. Downstream keep-alive follows the client's request (HTTP/1.1 default,
 * {@code Connection: close}, HTTP/1.0 with or without {@code keep-alive}).
 *
 * <p>Backpressure: while the upstream channel is not writable, reading from the client pauses, and
 * while the client is not writable, reading from the origin pauses (autoRead follows writability).
 *
 * <p>Answers it sends itself: 403 {@code address_class} / {@code self_loop} (a resolved answer
 * is denied), 502 {@code dns_failure} / {@code upstream_connect_failed}, 504 {@code upstream_timeout};
 * 502 {@code upstream_protocol_error} for a response head the decoder rejects (bad status line or
 * header block, RFC 9112 sections 4 and 5) or a {@code 101} nobody asked for; a response that breaks
 * off or turns malformed mid-body closes the downstream connection. Nothing the decoder rejected is
 * ever written downstream. A request whose own chunked framing breaks mid-body
 * ({@link ExchangeControl.Abort} from the request phase) closes the upstream connection before the
 * request's end and is answered 400 {@code malformed_request}. A client that half-closes mid-body
 * ({@link ExchangeControl.ClientClosedMidBody}) gets nothing more: the upstream connection and the
 * downstream connection close, and the record says {@code error: client_closed_mid_body}.
 *
 * <p>A kept-alive upstream connection may be closed by the origin just as the next request is written
 * on it (RFC 9112 section 9.3.1: any side may close an idle connection at any time; the request and the
 * close cross on the wire). When a REUSED connection closes or resets before a single byte of the
 * response, and the request is idempotent (RFC 9110 section 9.2.2) and carried no body, the forwarder
 * sends it once more on a freshly dialled connection (through the same checks) instead of answering
 * 502; one record covers both attempts. A fresh connection's failure, a request with a body, a
 * non-idempotent method or a second failure is answered as before.
 *
 * <p>WebSocket (RFC 6455): a {@link ForwardRequest#websocket()} handshake whose origin answers 101 with
 * the right {@code Sec-WebSocket-Accept} turns both connections into a {@link WebSocketRelay} (bytes,
 * or frames through {@link WebSocketInspection} for {@code websocket: inspect}, with permessage-deflate
 * per {@link WebSocketDeflate}); the exchange's record becomes the connection's, written when it ends.
 * A 101 without a valid accept, or naming an extension Sluice did not offer, is 502
 * {@code upstream_protocol_error}; any other answer is relayed as usual.
 *
 * <p>HTTP/2 upstream ({@link #h2Upstream}, the forwarders of an HTTP/2 client's streams): a fresh
 * upstream connection offers {@code h2} and {@code http/1.1} by ALPN and the request waits, as during a
 * dial, for {@link UpstreamAlpn} to report the handshake (trust and pins) and the origin's choice. With
 * {@code h2} the exchange is a stream of an {@link H2Upstream} shared through {@link H2Upstreams} (the
 * {@code upstream} channel is then the stream's child channel, closed with the exchange); with
 * {@code http/1.1} everything above applies. A failed handshake is the request's answer (502
 * {@code pin_mismatch}, {@code upstream_tls_failed}, ...). The record says which in {@code upstream.protocol}.
 */
public final class HttpForwarder extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(HttpForwarder.class);

    /** RFC 9110 section 9.2.2: the methods a proxy may send again after a connection failure. */
    private static final java.util.Set<String> IDEMPOTENT_METHODS =
            java.util.Set.of("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE");

    /** Largest response header block accepted from an origin, in bytes. */
    static final int MAX_RESPONSE_HEADER_BYTES = 65_536;

    private final ProxyContext context;
    private final @Nullable UpstreamTls upstreamTls;
    private @Nullable ChannelHandlerContext ctx;
    /** The upstream connection of the exchange (or kept after it) and what is known of it. */
    private final UpstreamLeg leg = new UpstreamLeg();
    /** The exchange in progress (its request, how far each half got). */
    private final Exchange exchange = new Exchange();
    /** The request body held while an upstream channel is dialled or negotiated, and its byte count. */
    private final RequestBodyHold body = new RequestBodyHold();
    /** Relays the origin's responses to the client and ends each exchange (its record, its answers). */
    private final ResponseRelay relay = new ResponseRelay(leg, exchange, this::onUpstreamInactive);
    /** Where an idle kept-alive upstream connection goes after the exchange (HTTP/2 streams), or null. */
    private @Nullable UpstreamPool pool;
    /** HTTP/2 streams of an h2 client: upstream connections offer h2 and are shared here; else null. */
    private H2Upstreams h2;
    /** How fresh upstream connections speak TLS when {@link #h2} is set (ALPN h2, http/1.1). */
    private UpstreamTls h2Tls;
    /** With {@link #h2}: the adopted connection, its handshake under way, until a request claims it. */
    private Owned adopted;

    /** A fresh upstream connection this forwarder dialled or adopted, its protocol not yet known. */
    private record Owned(Channel channel, ByteCounter counter, String authority, Policy policy,
                         Future<UpstreamAlpn.Negotiated> negotiation, boolean dialled) {
    }

    /** A forwarder for plain HTTP (upstream connections without TLS). */
    public HttpForwarder(ProxyContext context) {
        this(context, null);
    }

    /**
     * @param upstreamTls for requests inside an intercepted tunnel: how upstream connections speak
     *                    TLS (PKIX, hostname, pins); null for plain HTTP
     */
    public HttpForwarder(ProxyContext context, @Nullable UpstreamTls upstreamTls) {
        this.context = context;
        this.upstreamTls = upstreamTls;
    }

    /**
     * Takes over an upstream connection that was already dialled and checked (the CONNECT's), for the
     * requests of an intercepted tunnel: adds TLS (when this forwarder has it), the HTTP codec and the
     * response relay, and starts reading. Call on the event loop, before the first request.
     */
    public void adopt(Channel channel, ByteCounter counter, Target target, Policy policy) {
        if (h2 != null) {
            // The protocol is the origin's choice, known when the handshake ends; the first request waits.
            io.netty.util.concurrent.Promise<UpstreamAlpn.Negotiated> negotiation = channel.eventLoop().newPromise();
            installH2Offer(channel, target, policy, negotiation);
            h2.negotiating(target.authority(), policy, negotiation);
            adopted = new Owned(channel, counter, target.authority(), policy, negotiation, false);
            Reads.setAutoRead(channel, true);
            return;
        }
        installUpstreamHandlers(channel, target);
        leg.channel = channel;
        leg.exchanges = 0;
        leg.counter = counter;
        leg.authority = target.authority();
        leg.policy = policy;
        leg.failure = null;
        leg.handshakeFailure = null;
        Reads.setAutoRead(channel, true);
    }

    /** Adds TLS offering h2 and http/1.1, and {@link UpstreamAlpn} behind it, which completes {@code negotiation}. */
    private void installH2Offer(Channel ch, Target target, Policy policy,
                                io.netty.util.concurrent.Promise<UpstreamAlpn.Negotiated> negotiation) {
        h2Tls.install(ch.pipeline(), target.host(), target.port());
        ch.pipeline().addLast(UpstreamAlpn.NAME, new UpstreamAlpn(target.authority(), policy, negotiation));
    }

    private void installUpstreamHandlers(Channel ch, Target target) {
        if (upstreamTls != null) {
            upstreamTls.install(ch.pipeline(), target.host(), target.port());
        }
        ch.pipeline().addLast("codec", new HttpClientCodec(8192, MAX_RESPONSE_HEADER_BYTES, 65_536));
        ch.pipeline().addLast("response", relay.newReader());
    }

    /**
     * Makes this forwarder take its upstream connection from {@code pool} when one fits, and park it
     * there after an exchange that leaves it reusable, instead of closing it (the forwarders of one
     * HTTP/2 connection's streams, each of which lives for one exchange). Call before the first request.
     */
    public void pool(UpstreamPool pool) {
        this.pool = pool;
        relay.pool(pool);
    }

    /**
     * Makes this forwarder (one HTTP/2 client stream's) offer {@code h2} and {@code http/1.1} by ALPN on
     * every fresh upstream connection ({@code tls}: the same trust and pins, another ALPN offer) and
     * carry its exchange as a stream of an h2 connection in {@code shared} when the origin chose h2
     * (one upstream connection multiplexing the streams of the downstream connection), or over
     * HTTP/1.1 as before. Call before {@link #adopt} and the first request.
     */
    public void h2Upstream(H2Upstreams shared, UpstreamTls tls) {
        this.h2 = shared;
        this.h2Tls = tls;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        relay.bind(ctx, context.refusalLinger());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            start(request);
        } else if (msg instanceof ExchangeControl.Refuse refuse) {
            exchange.request = refuse.request();
            exchange.requestComplete = false;
            exchange.responseStarted = false;
            exchange.closeDownstream = !refuse.request().downstreamKeepAlive();
            relay.refuse(refuse.decision(), refuse.detail());
        } else if (msg instanceof ExchangeControl.Abort abort) {
            if (exchange.request != null && !exchange.responseStarted) {
                leg.close();
                relay.refuse(abort.decision(), abort.detail());
            } else if (exchange.request != null) {
                exchange.request.audit().error(abort.detail());
                relay.abort(abort.decision());
            }
        } else if (msg instanceof ExchangeControl.ClientClosedMidBody closed) {
            onClientClosedMidBody(closed);
        } else if (msg instanceof HttpContent content) {
            onRequestContent(content);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void start(ForwardRequest request) {
        exchange.begin(request);
        if ("inspect".equals(request.websocket())) {
            // Sluice reads the frames: each leg negotiates its own extensions (only permessage-deflate).
            io.netty.handler.codec.http.HttpHeaders headers = request.request().headers();
            exchange.clientExtensions = headers.get(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS);
            headers.remove(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS);
            if (WebSocketDeflate.offered(exchange.clientExtensions)) {
                headers.set(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS, WebSocketDeflate.upstreamOffer());
            }
        }
        leg.reused = false;
        body.startExchange();
        String authority = request.target().target().authority();
        if (pool != null && leg.channel == null && leg.handshakeFailure == null) {
            UpstreamPool.Parked parked = pool.take(authority, request.policy());
            if (parked != null) {
                // The connection's TLS (with its pin check) and HTTP codec stay; its events come here now.
                parked.channel().pipeline().replace("response", "response", relay.newReader());
                leg.attachParked(parked); // parked after an exchange: a reused connection
                Reads.setAutoRead(leg.channel, true);
            }
        }
        if (leg.channel != null && leg.channel.isActive() && authority.equals(leg.authority)
                && request.policy() == leg.policy) {
            leg.reused = leg.exchanges > 0;
            leg.counter.attach(request.audit(), request.traffic());
            request.audit().peerAddress(peerAddress(leg.channel));
            if (leg.pin != null) {
                request.audit().pin(leg.pin);
            }
            recordUpstreamProtocol(request);
            leg.channel.writeAndFlush(request.request()).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            return;
        }
        if (leg.handshakeFailure != null && authority.equals(leg.authority)
                && request.policy() == leg.policy) {
            // The connection this forwarder adopted failed its TLS handshake before the request came
            // (a pin mismatch, an untrusted chain): that is the answer, not a second handshake.
            Throwable failure = leg.handshakeFailure;
            leg.handshakeFailure = null;
            leg.close();
            relay.refuse(UpstreamFailures.classify(failure), "upstream TLS: " + failure.getClass().getSimpleName());
            return;
        }
        leg.close();
        if (h2 != null) {
            Owned own = adopted;
            adopted = null;
            Future<UpstreamAlpn.Negotiated> shared = own != null ? own.negotiation() : h2.find(authority, request.policy());
            if (shared != null) {
                awaitNegotiation(request, shared, own);
                return;
            }
        }
        dial(request);
    }

    /** Waits (reading paused, body queued) for the handshake of an upstream connection, then {@link #onNegotiated}. */
    private void awaitNegotiation(ForwardRequest request, Future<UpstreamAlpn.Negotiated> negotiation, Owned own) {
        body.startWaiting();
        Reads.setAutoRead(ctx.channel(), false);
        negotiation.addListener(f -> onNegotiated(request, negotiation, own));
    }

    /**
     * A connection's protocol is known. Its handshake failed: the request is refused with that failure
     * (502 {@code pin_mismatch}, {@code upstream_tls_failed}...), no second handshake. h2: the exchange
     * opens a stream on it. http/1.1: this forwarder's own connection ({@code own}) becomes the exchange's
     * upstream; another forwarder's means an HTTP/1.1 origin, so an idle connection or a dial.
     */
    private void onNegotiated(ForwardRequest request, Future<UpstreamAlpn.Negotiated> f, Owned own) {
        body.stopWaiting();
        boolean wanted = exchange.request == request && ctx.channel().isActive();
        if (!f.isSuccess()) {
            if (own != null) {
                own.channel().close();
            }
            body.release();
            if (wanted) {
                Throwable cause = f.cause();
                request.audit().error("upstream: " + cause.getClass().getSimpleName()
                        + (cause.getMessage() == null ? "" : ": " + cause.getMessage()));
                relay.refuse(UpstreamFailures.classify(cause), null);
            }
            return;
        }
        UpstreamAlpn.Negotiated negotiated = f.getNow();
        String authority = request.target().target().authority();
        if (negotiated.h2() != null) {
            if (own != null && own.dialled()) {
                // The connection is shared now: its bytes outside the streams (frame headers, HPACK,
                // SETTINGS) count for the extension, not in this exchange's record. (The CONNECT's
                // connection keeps counting them into the tunnel's record, as its handshake.)
                own.counter().fallback(null, request.traffic());
            }
            if (!wanted) {
                body.release();
            } else if (negotiated.h2().serves(authority, request.policy()) && negotiated.h2().usable()) {
                openStream(request, negotiated.h2(), own == null);
            } else {
                dial(request);
            }
            return;
        }
        if (own == null) {
            if (wanted) {
                connectHttp1(request);
            } else {
                body.release();
            }
            return;
        }
        if (!wanted || !own.channel().isActive() || !own.authority().equals(authority)
                || own.policy() != request.policy()) {
            parkOrClose(own, negotiated);
            if (wanted) {
                connectHttp1(request);
            } else {
                body.release();
            }
            return;
        }
        own.channel().pipeline().replace("response", "response", relay.newReader());
        leg.attach(own.channel(), own.counter(), own.authority(), own.policy(), negotiated.pin(), 0);
        leg.counter.attach(request.audit(), request.traffic());
        request.audit().pin(negotiated.pin());
        request.audit().peerAddress(peerAddress(leg.channel));
        sendRequest(request);
    }

    /** Puts {@code upstream.protocol} in an intercepted exchange's record: h2 on a stream, else http/1.1. */
    private void recordUpstreamProtocol(ForwardRequest request) {
        if (upstreamTls != null) {
            request.audit().upstreamProtocol(leg.stream ? "h2" : "http/1.1");
        }
    }

    /** An HTTP/1.1 connection of this forwarder that no exchange of its takes: to the pool, or closed. */
    private void parkOrClose(Owned own, UpstreamAlpn.Negotiated negotiated) {
        if (pool != null && own.channel().isActive()) {
            own.counter().attach(null, null);
            pool.park(new UpstreamPool.Parked(own.channel(), own.counter(), own.authority(), own.policy(), negotiated.pin()));
        } else {
            own.channel().close();
        }
    }

    /**
     * The adopted connection no request of this forwarder claimed (its stream ended first): once its
     * handshake ends, an h2 connection stays shared (closed with the others), an HTTP/1.1 one is parked
     * for the next stream, a failed one closes.
     */
    private void releaseAdopted() {
        Owned own = adopted;
        adopted = null;
        if (own == null) {
            return;
        }
        own.negotiation().addListener(f -> {
            if (!f.isSuccess()) {
                own.channel().close();
            } else if (own.negotiation().getNow().h2() == null) {
                parkOrClose(own, own.negotiation().getNow());
            }
        });
    }

    /** An HTTP/1.1 origin: an idle connection from the pool, else a dial. */
    private void connectHttp1(ForwardRequest request) {
        UpstreamPool.Parked parked = pool == null ? null
                : pool.take(request.target().target().authority(), request.policy());
        if (parked == null) {
            dial(request);
            return;
        }
        parked.channel().pipeline().replace("response", "response", relay.newReader());
        leg.attachParked(parked);
        leg.reused = true;
        leg.counter.attach(request.audit(), request.traffic());
        request.audit().peerAddress(peerAddress(leg.channel));
        if (leg.pin != null) {
            request.audit().pin(leg.pin);
        }
        Reads.setAutoRead(leg.channel, true);
        sendRequest(request);
    }

    /**
     * Opens a stream on the h2 upstream connection {@code conn} for {@code request}; its DATA bytes
     * count into the exchange's record (the connection's own bytes count for the extension).
     */
    private void openStream(ForwardRequest request, H2Upstream conn, boolean reused) {
        body.startWaiting();
        Reads.setAutoRead(ctx.channel(), false);
        ByteCounter streamCounter = new ByteCounter();
        streamCounter.attach(request.audit(), null);
        io.netty.channel.ChannelHandler response = relay.newReader();
        conn.openStream(streamCounter, response).addListener(
                (Future<io.netty.handler.codec.http2.Http2StreamChannel> f) -> {
                    body.stopWaiting();
                    if (exchange.request != request || !ctx.channel().isActive()) {
                        if (f.isSuccess()) {
                            f.getNow().close();
                        }
                        body.release();
                        return;
                    }
                    if (!f.isSuccess()) {
                        body.release();
                        request.audit().error("h2 upstream stream: " + f.cause().getClass().getSimpleName());
                        relay.refuse(Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.UPSTREAM), null);
                        return;
                    }
                    leg.attach(f.getNow(), streamCounter, conn.authority(), conn.policy(), conn.pin(), reused ? 1 : 0);
                    leg.stream = true;
                    leg.reused = reused;
                    request.audit().pin(conn.pin());
                    request.audit().peerAddress(peerAddress(conn.channel()));
                    sendRequest(request);
                });
    }

    /** Dials a fresh upstream connection for {@code request}; {@link #onDialed} sends it. */
    private void dial(ForwardRequest request) {
        body.startWaiting();
        Reads.setAutoRead(ctx.channel(), false);
        io.netty.util.concurrent.Promise<UpstreamAlpn.Negotiated> negotiation =
                h2 == null ? null : ctx.channel().eventLoop().newPromise();
        ByteCounter counter = new ByteCounter();
        counter.attach(request.audit(), request.traffic());
        Future<Dialed> dial = context.dialer().dial(ctx.channel().eventLoop(), request.policy(), request.decision(),
                request.target().target(), new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast("bytes", counter);
                        if (h2 != null) {
                            installH2Offer(ch, request.target().target(), request.policy(), negotiation);
                        } else {
                            installUpstreamHandlers(ch, request.target().target());
                        }
                    }
                }, upstreamTls != null ? UpstreamKind.TUNNEL : UpstreamKind.PLAIN_HTTP);
        dial.addListener((Future<Dialed> f) -> onDialed(request, counter, f, negotiation));
    }

    private void onDialed(ForwardRequest request, ByteCounter counter, Future<Dialed> f,
                          Future<UpstreamAlpn.Negotiated> negotiation) {
        body.stopWaiting();
        if (exchange.request != request || !ctx.channel().isActive()) {
            if (f.isSuccess()) {
                f.getNow().channel().close();
            }
            body.release();
            return;
        }
        if (!f.isSuccess()) {
            Throwable cause = f.cause();
            Decision denial = cause instanceof DialFailure failure
                    ? failure.decision() : Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.CONNECT);
            body.release();
            relay.refuse(denial, cause instanceof DialFailure ? cause.getMessage() : "connect failed");
            return;
        }
        Dialed dialed = f.getNow();
        if (negotiation != null) {
            // Offered h2 and http/1.1: what follows depends on the origin's choice, known after the handshake.
            request.audit().peerAddress(dialed.remote().getAddress().getHostAddress());
            String authority = request.target().target().authority();
            h2.negotiating(authority, request.policy(), negotiation);
            awaitNegotiation(request, negotiation,
                    new Owned(dialed.channel(), counter, authority, request.policy(), negotiation, true));
            return;
        }
        leg.attach(dialed.channel(), counter, request.target().target().authority(), request.policy(), null, 0);
        request.audit().peerAddress(dialed.remote().getAddress().getHostAddress());
        sendRequest(request);
    }

    /** Writes the request head, the body held so far, and starts relaying on the upstream leg's channel. */
    private void sendRequest(ForwardRequest request) {
        recordUpstreamProtocol(request);
        if (leg.stream && Boolean.TRUE.equals(ctx.channel().attr(H2Upstreams.TE_TRAILERS).get())) {
            request.request().headers().set(HttpHeaderNames.TE, HttpHeaderValues.TRAILERS);
        }
        leg.channel.write(request.request()).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        for (HttpContent held = body.poll(); held != null; held = body.poll()) {
            leg.channel.write(held).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
        if (exchange.replayed && exchange.requestComplete) {
            // The replayed request has no body: its end is all that is left to send.
            leg.channel.write(LastHttpContent.EMPTY_LAST_CONTENT).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
        leg.channel.flush();
        Reads.setAutoRead(leg.channel, true);
        if (!exchange.requestComplete) {
            Reads.setAutoRead(ctx.channel(), leg.channel.isWritable());
        }
    }

    private void onRequestContent(HttpContent content) {
        if (content instanceof LastHttpContent) {
            exchange.requestComplete = true;
        }
        body.count(content);
        if (exchange.request == null) {
            // The exchange already ended (refused or answered early): the rest of the body is dropped.
            content.release();
            if (exchange.lingering && content instanceof LastHttpContent) {
                exchange.lingering = false;
                Lingering.close(ctx);
            }
            return;
        }
        if (body.waiting()) {
            body.hold(content);
            return;
        }
        if (leg.channel == null || !leg.channel.isActive()) {
            content.release();
            return;
        }
        leg.channel.writeAndFlush(content).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        if (!exchange.requestComplete && !leg.channel.isWritable()) {
            Reads.setAutoRead(ctx.channel(), false);
        }
    }

    /**
     * The request body can no longer arrive (the client half-closed): the exchange ends now. The
     * upstream connection closes (a dial still under way is closed when it completes), the record is
     * written with what was counted so far, and the downstream connection closes once what is already
     * written is flushed; nothing more is sent to the client.
     */
    private void onClientClosedMidBody(ExchangeControl.ClientClosedMidBody closed) {
        exchange.lingering = false;
        body.release();
        ForwardRequest request = exchange.request;
        exchange.request = null;
        leg.close();
        if (request != null) {
            request.audit().error(closed.error());
            request.audit().emit();
        }
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }

    /**
     * An upstream channel went away (told by the relay's reader). The exchange's own: a request that may be
     * sent again ({@link #replayable}) is dialled anew, else the exchange is {@link ResponseRelay#abort}ed
     * with the connection's failure (none while a dial or negotiation is still under way).
     */
    private void onUpstreamInactive(Channel channel) {
        if (channel != leg.channel) {
            return;
        }
        leg.channel = null;
        leg.counter = null;
        if (exchange.request != null && !body.waiting() && replayable()) {
            log.debug("reused upstream {} closed before answering {} {}: sending it again on a new connection",
                    channel.remoteAddress(), exchange.request.request().method(), leg.authority);
            exchange.replayed = true;
            leg.reused = false;
            leg.failure = null;
            leg.authority = null;
            leg.policy = null;
            dial(exchange.request);
            return;
        }
        if (exchange.request != null && !body.waiting()) {
            Throwable failure = leg.failure;
            exchange.request.audit().error(failure == null ? "upstream closed before the response ended"
                    : "upstream: " + failure.getClass().getSimpleName()
                    + (failure.getMessage() == null ? "" : ": " + failure.getMessage()));
            relay.abort(UpstreamFailures.classify(failure));
        }
    }

    /**
     * Whether the current request may be sent again after its upstream connection closed: it went out
     * on a reused connection, nothing of a response came back, it is idempotent (RFC 9110 section
     * 9.2.2) and whole, with an empty body, and it was not sent again already.
     */
    private boolean replayable() {
        return leg.reused && !exchange.replayed && !exchange.responseBegun && exchange.requestComplete
                && body.bodyBytes() == 0 && IDEMPOTENT_METHODS.contains(exchange.request.request().method().name());
    }

    private static String peerAddress(Channel channel) {
        return channel.remoteAddress() instanceof java.net.InetSocketAddress a
                ? a.getAddress().getHostAddress() : String.valueOf(channel.remoteAddress());
    }

    // ---- downstream events --------------------------------------------------------------------

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        relay.downstreamWritabilityChanged();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (exchange.request != null) {
            if (exchange.request.audit().errorOrNull() == null) {
                // An exchange cut by a timeout already says so (idle_timeout); keep that.
                exchange.request.audit().error("downstream closed before the exchange ended");
            }
            exchange.request.audit().emit();
            exchange.request = null;
        }
        body.release();
        leg.close();
        releaseAdopted();
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent && exchange.request != null) {
            exchange.request.audit().error("idle_timeout: no byte either way for "
                    + exchange.request.policy().limits().idleTimeout().toMillis() + " ms");
        } else if (evt instanceof Draining) {
            // Shutting down: the response in progress (if its head is not out yet) says close.
            exchange.closeDownstream = true;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("downstream {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        if (exchange.request != null) {
            exchange.request.audit().error("downstream error: " + cause.getClass().getSimpleName());
        }
        ctx.close();
    }
}
