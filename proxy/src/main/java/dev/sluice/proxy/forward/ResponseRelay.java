package dev.sluice.proxy.forward;

import dev.sluice.certs.PinResult;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ExchangeSequencer;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.HopByHop;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.proxy.http.Refusals;
import dev.sluice.proxy.http.WebSocketUpgrade;
import dev.sluice.proxy.tls.InterceptionTls;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The response relay of one {@link HttpForwarder}: what its upstream channels' {@code response} handlers
 * ({@link #newReader}) receive from the origin goes back to the client here, and the exchange ends here.
 * A response head is checked (a {@code 101} only as the answer to a WebSocket handshake, handed to
 * {@link WebSocketSwitch}; a response scan may refuse it), stripped of hop-by-hop fields and framed for
 * the client by {@link ResponseFraming}; body chunks pass the request's response scan, if any, and are
 * written as they come, reading from the origin pausing while the client is not writable. (The upstream
 * channel's byte counter, ahead of its codec, counts into the record; at the exchange's end the relay
 * detaches it from a connection kept for the next one.) The exchange's end writes its one record:
 * {@link #completeExchange} after the response's end, {@link #abort} when the upstream side fails (502
 * before the head, a closed connection after it), {@link #refuse} for any refusal the forwarder answers
 * itself (dial failures included). Answers and ordering are those documented on {@link HttpForwarder}.
 *
 * <p>The relay shares the forwarder's {@link UpstreamLeg} and {@link Exchange} and runs on the downstream
 * connection's event loop (every upstream channel of a forwarder is on it). When an upstream channel goes
 * inactive it tells the forwarder ({@link UpstreamClosed}), which may send the request again on a new
 * connection before it asks for {@link #abort}.
 *
 * <p>Buffer ownership: each message the codec hands to a reader is the relay's from then on, and leaves
 * it exactly once: written downstream (the write releases it, also when it fails), handed with a
 * {@code 101} to {@link WebSocketSwitch} (which releases it), or released here (a malformed message, a
 * refused or unexpected head, bytes after a complete response, from a channel that is no longer the
 * exchange's or with no exchange in progress, anything that is not an {@link HttpObject}). A response
 * scan sees a chunk's bytes without taking them. The refusals it writes are allocated from the downstream
 * channel and released by that write. The relay keeps no buffer between calls.
 */
final class ResponseRelay {

    private static final Logger log = LoggerFactory.getLogger(HttpForwarder.class);

    /** Rule id of refusals caused by what the origin answered. */
    static final String RULE_UPSTREAM = BuiltinRules.UPSTREAM;

    /** The forwarder's part when an upstream channel goes away (it may dial again for the exchange). */
    interface UpstreamClosed {
        /** {@code channel}, one this relay's reader served, became inactive. */
        void upstreamInactive(Channel channel);
    }

    private final UpstreamLeg leg;
    private final Exchange exchange;
    private final UpstreamClosed closed;
    /** The forwarder's context on the downstream channel, where responses and answers are written. */
    private @Nullable ChannelHandlerContext ctx;
    /** How long a refusal's request body is read and dropped before the connection closes (set by {@link #bind}). */
    private Duration linger = ProxyContext.DEFAULT_REFUSAL_LINGER;
    /** Where an idle kept-alive upstream connection goes after the exchange, or null (kept on the leg). */
    private @Nullable UpstreamPool pool;

    /**
     * @param leg the forwarder's upstream leg (the relay closes, keeps or parks its channel at the exchange's end)
     * @param exchange the forwarder's exchange state
     * @param closed told when an upstream channel served by a reader becomes inactive
     */
    ResponseRelay(UpstreamLeg leg, Exchange exchange, UpstreamClosed closed) {
        this.leg = leg;
        this.exchange = exchange;
        this.closed = closed;
    }

    /**
     * The forwarder was added to the downstream pipeline: responses are written through {@code ctx}, and a
     * refusal while the request body still arrives lingers at most {@code linger}.
     */
    void bind(ChannelHandlerContext ctx, Duration linger) {
        this.ctx = ctx;
        this.linger = linger;
    }

    /** Parks a connection left reusable by an exchange in {@code pool} instead of keeping it on the leg. */
    void pool(UpstreamPool pool) {
        this.pool = pool;
    }

    /** A new {@code response} handler for an upstream channel's pipeline (one per channel, not shared). */
    ChannelHandler newReader() {
        return new Reader();
    }

    /** The downstream channel's writability changed: reading from the origin resumes once it is writable. */
    void downstreamWritabilityChanged() {
        if (ctx.channel().isWritable() && leg.channel != null) {
            Reads.setAutoRead(leg.channel, true);
        }
    }

    /**
     * Bytes an origin sent after a response, in the read that ended it: nothing of them is relayed and
     * the connection is closed, never reused. An exchange already sent on it (a pipelined request taken
     * up at once) is then handled as on any reused connection that closes before answering: an
     * idempotent request without a body is sent again on a new connection, anything else gets 502.
     */
    private void onUnsolicited(Channel from, HttpObject msg) {
        ReferenceCountUtil.release(msg);
        log.debug("upstream {} sent bytes after a complete response; closing it", from.remoteAddress());
        from.close();
    }

    /** One decoded message of the response to the exchange in progress (its reference is the relay's now). */
    private void onResponse(Channel from, HttpObject msg) {
        if (from != leg.channel || exchange.request == null) {
            // Bytes from an origin with no exchange in progress: it is not speaking HTTP/1.1 correctly.
            ReferenceCountUtil.release(msg);
            from.close();
            return;
        }
        if (msg.decoderResult().isFailure()) {
            // What the decoder could not parse is never relayed: it may be a whole (empty) message
            // standing for the bad head, or the last chunk of a broken body.
            onMalformedResponse(msg);
            return;
        }
        if (msg instanceof HttpResponse response && !onResponseHead(response)) {
            return;
        }
        if (msg instanceof HttpContent content) {
            onResponseContent(content);
        }
    }

    /**
     * Ends the exchange on a response the decoder rejected (RFC 9112: a bad status line or header
     * block, a broken chunk): releases {@code msg} once and writes nothing of it; 502
     * {@code upstream_protocol_error} when the head is not out yet, else the downstream connection
     * closes (the client must not take a cut body for a whole one).
     */
    private void onMalformedResponse(HttpObject msg) {
        boolean head = msg instanceof HttpResponse;
        ReferenceCountUtil.release(msg);
        exchange.request.audit().error(head ? "malformed response head from upstream"
                : "malformed response body from upstream");
        abort(Decision.deny(Reason.UPSTREAM_PROTOCOL_ERROR, RULE_UPSTREAM));
    }

    /**
     * Handles a valid response head; returns false when it ended the exchange (nothing of this
     * response is relayed then).
     */
    private boolean onResponseHead(HttpResponse response) {
        AuditEvent audit = exchange.request.audit();
        int code = response.status().code();
        if (code == 101) {
            String key = exchange.request.websocket() == null ? null
                    : exchange.request.request().headers().get(HttpHeaderNames.SEC_WEBSOCKET_KEY);
            boolean inspect = "inspect".equals(exchange.request.websocket());
            io.netty.handler.codec.http.websocketx.extensions.WebSocketClientExtension originDeflate = null;
            String answered = response.headers().get(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS);
            if (key != null && inspect && answered != null) {
                originDeflate = WebSocketDeflate.offered(exchange.clientExtensions)
                        ? WebSocketDeflate.acceptOriginAnswer(answered,
                                exchange.request.policy().limits().maxWebsocketMessageBytes())
                        : null;
                if (originDeflate == null) {
                    // Not what Sluice offered: frames it could not read.
                    ReferenceCountUtil.release(response);
                    audit.error("upstream accepted a websocket extension Sluice did not offer");
                    abort(Decision.deny(Reason.UPSTREAM_PROTOCOL_ERROR, RULE_UPSTREAM));
                    return false;
                }
            }
            if (key != null && WebSocketUpgrade.accepts(response, key)) {
                switchToWebSocket(response, originDeflate);
                return false;
            }
            // Sluice forwards no other upgrade, so no origin may switch protocols otherwise; nor accept a
            // WebSocket handshake it was not given.
            ReferenceCountUtil.release(response);
            audit.error(key != null ? "upstream switched protocols (101) without a valid Sec-WebSocket-Accept"
                    : "upstream switched protocols (101) though no upgrade was asked for");
            abort(Decision.deny(Reason.UPSTREAM_PROTOCOL_ERROR, RULE_UPSTREAM));
            return false;
        }
        exchange.responseBegun = true;
        exchange.interimResponse = code >= 100 && code < 200;
        boolean originKeepAlive = HttpUtil.isKeepAlive(response);
        HopByHop.strip(response.headers());
        if (exchange.interimResponse) {
            ctx.write(response);
            return true;
        }
        ExchangeControl.Abort refusal = exchange.request.responseScan() == null ? null
                : exchange.request.responseScan().refuseHead(response);
        if (refusal != null) {
            // nothing of this response goes downstream (e.g. a body Sluice must scrub but cannot read)
            ReferenceCountUtil.release(response);
            if (refusal.detail() != null) {
                audit.error(refusal.detail());
            }
            abort(refusal.decision());
            return false;
        }
        exchange.responseStarted = true;
        audit.statusCode(code);
        if (exchange.request.responseScan() != null) {
            exchange.request.responseScan().onHead(response);
        }
        HttpVersion downstreamVersion = exchange.request.request().protocolVersion();
        ResponseFraming framing = ResponseFraming.of(downstreamVersion, exchange.request.request().method(), code,
                HttpUtil.isTransferEncodingChunked(response), HttpUtil.isContentLengthSet(response), originKeepAlive);
        exchange.upstreamKeepAlive = framing.upstreamReusable();
        if (framing.chunk()) {
            HttpUtil.setTransferEncodingChunked(response, true);
        } else if (framing.unchunk()) {
            HttpUtil.setTransferEncodingChunked(response, false);
        }
        exchange.closeDownstream |= framing.closeDownstream();
        response.setProtocolVersion(HttpVersion.HTTP_1_1);
        if (exchange.closeDownstream) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (downstreamVersion.equals(HttpVersion.HTTP_1_0)) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        ctx.write(response);
        return true;
    }

    /**
     * The origin accepted a WebSocket handshake: this forwarder lets go of the exchange and the upstream
     * connection, and {@link WebSocketSwitch} turns both connections into a {@link WebSocketRelay}.
     */
    private void switchToWebSocket(HttpResponse response,
                                   io.netty.handler.codec.http.websocketx.extensions.WebSocketClientExtension originDeflate) {
        ForwardRequest request = exchange.request;
        exchange.request = null;
        exchange.responseStarted = true;
        Channel up = leg.detach();
        WebSocketSwitch.start(ctx, request, response, up, exchange.clientExtensions, originDeflate);
    }

    /**
     * Relays a body chunk (its reference passes to the downstream write) after the response scan saw it;
     * the chunk ending a final response completes the exchange ({@link #completeExchange}).
     */
    private void onResponseContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (!exchange.interimResponse && exchange.request != null && exchange.request.responseScan() != null) {
            exchange.request.responseScan().onContent(content.content(), last, exchange.request.audit());
        }
        ctx.writeAndFlush(content).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        String stop = !exchange.interimResponse && exchange.request != null
                && exchange.request.responseScan() != null ? exchange.request.responseScan().stopReason() : null;
        if (stop != null && !last) {
            // A response scan refused the rest (a red_flags block rule): what was relayed stays, the
            // stream ends here and the client sees the connection close before the body's end.
            ForwardRequest done = exchange.request;
            exchange.request = null;
            leg.close();
            done.audit().error(stop);
            done.audit().emit();
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        if (leg.channel != null && !ctx.channel().isWritable()) {
            Reads.setAutoRead(leg.channel, false);
        }
        if (!last) {
            return;
        }
        if (exchange.interimResponse) {
            exchange.interimResponse = false;
            return;
        }
        completeExchange();
    }

    /**
     * The final response ended: its record is written; the upstream channel is closed, or (the origin and the
     * request allowing it) kept, or parked in the pool, for the next exchange; the downstream connection closes
     * or the request phase is told it may take the next request.
     */
    private void completeExchange() {
        ForwardRequest done = exchange.request;
        exchange.request = null;
        done.audit().emit();
        Reader reader = leg.channel == null ? null : leg.channel.pipeline().get(Reader.class);
        if (reader != null) {
            reader.responseEndedAt = reader.reads;
        }
        if (leg.stream || !exchange.upstreamKeepAlive || !exchange.requestComplete) {
            // An h2 stream ends with its exchange (the connection stays for the next one).
            leg.close();
        } else if (leg.counter != null) {
            leg.exchanges++;
            leg.counter.attach(null, null);
            if (pool != null && leg.channel != null && leg.channel.isActive()) {
                pool.park(leg.park());
            }
        }
        if (exchange.closeDownstream) {
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        ChannelHandlerContext requestPhase = ctx.pipeline().context(ExchangeSequencer.class);
        if (requestPhase != null) {
            ((ExchangeSequencer) requestPhase.handler()).exchangeComplete(requestPhase);
        }
    }

    /**
     * Ends the exchange in progress because the upstream side failed: the upstream channel closes; the
     * client is answered {@code failure} when no final response head went out yet ({@link #refuse}), else
     * its connection closes (the only honest signal left) and the record is written. Nothing when no
     * exchange is in progress (the upstream channel still closes).
     */
    void abort(Decision failure) {
        leg.close();
        if (exchange.request == null) {
            return;
        }
        if (!exchange.responseStarted) {
            refuse(failure, null);
            return;
        }
        // Part of the response is already on its way: the only honest signal left is closing.
        AuditEvent audit = exchange.request.audit();
        exchange.request = null;
        audit.emit();
        ctx.close();
    }

    /**
     * Ends the exchange in progress with a refusal the forwarder writes itself ({@link Answers#refusal}):
     * the record gets {@code denial}, its status and {@code detail} as its error (unless it has one), and is
     * written; then the downstream connection is kept (and the request phase told the exchange is over),
     * closed, or, when the request body is still coming, left {@link Exchange#lingering} until it ends.
     * Requires an exchange in progress.
     */
    void refuse(Decision denial, @Nullable String detail) {
        ForwardRequest request = exchange.request;
        exchange.request = null;
        boolean close = exchange.closeDownstream || !exchange.requestComplete;
        String accept = request.request().headers().get(HttpHeaderNames.ACCEPT);
        if (close && !exchange.requestComplete) {
            // The request body is still coming: drop it as it arrives, close when it ends, when the
            // client half-closes, or after the linger. Reading may have been paused (for the dial, or
            // for backpressure): without reading, neither the body's end nor a FIN would be seen.
            exchange.lingering = true;
            Refusals.refuse(ctx, request.audit(), denial, detail, accept, Refusals.Ending.CLOSE_AFTER_BODY, linger);
            Reads.setAutoRead(ctx.channel(), true);
            return;
        }
        if (close) {
            Refusals.refuse(ctx, request.audit(), denial, detail, accept, Refusals.Ending.CLOSE, linger);
            return;
        }
        Refusals.refuse(ctx, request.audit(), denial, detail, accept, Refusals.Ending.KEEP_OPEN, linger);
        ChannelHandlerContext requestPhase = ctx.pipeline().context(ExchangeSequencer.class);
        if (requestPhase != null) {
            ((ExchangeSequencer) requestPhase.handler()).exchangeComplete(requestPhase);
        }
    }

    /**
     * The upstream channel's TLS handshake ended: a failure is kept on the leg (the exchange's answer, or,
     * with no exchange yet, the next request's); a success puts its pin check on the leg and the record.
     */
    private void onUpstreamHandshake(Channel channel, SslHandshakeCompletionEvent event) {
        if (channel != leg.channel) {
            return;
        }
        if (!event.isSuccess()) {
            leg.failure = event.cause();
            if (exchange.request == null) {
                leg.handshakeFailure = event.cause();
            }
            return;
        }
        SslHandler tls = channel.pipeline().get(SslHandler.class);
        leg.pin = tls == null ? null : InterceptionTls.pinCheck(tls.engine().getSession())
                .map(check -> check.result()).orElse(PinResult.NONE);
        if (exchange.request != null && leg.pin != null) {
            exchange.request.audit().pin(leg.pin);
        }
    }

    /**
     * The {@code response} handler of one upstream channel (an HTTP/1.1 connection, or an h2 stream's child
     * channel), behind its HTTP codec: hands what the origin sends to the relay, on the downstream
     * connection's event loop. Every message it is given is the relay's from then on (see the class
     * Javadoc); a message that is not an {@link HttpObject} is released here.
     */
    private final class Reader extends ChannelInboundHandlerAdapter {
        /** Reads of this connection completed so far (counted at each {@code channelReadComplete}). */
        private int reads;
        /** The read in which the last response on this connection ended; -1 before any. */
        private int responseEndedAt = -1;

        @Override
        public void channelRead(ChannelHandlerContext uctx, Object msg) {
            if (msg instanceof HttpObject object) {
                if (responseEndedAt == reads) {
                    // More bytes in the very read that ended a response: the origin sent them before it
                    // could have seen another request. Never the answer to the next one (RFC 9112
                    // section 9.3.2): the connection is done.
                    onUnsolicited(uctx.channel(), object);
                    return;
                }
                onResponse(uctx.channel(), object);
            } else {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext uctx) {
            reads++;
            uctx.fireChannelReadComplete();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext uctx) {
            if (uctx.channel().isWritable() && uctx.channel() == leg.channel && !exchange.requestComplete) {
                Reads.setAutoRead(ctx.channel(), true);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext uctx) {
            closed.upstreamInactive(uctx.channel());
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext uctx, Object evt) {
            if (evt instanceof SslHandshakeCompletionEvent handshake) {
                onUpstreamHandshake(uctx.channel(), handshake);
            }
            uctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext uctx, Throwable cause) {
            log.debug("upstream {} failed: {}", uctx.channel().remoteAddress(), cause.toString());
            if (uctx.channel() == leg.channel && leg.failure == null) {
                leg.failure = cause;
            }
            uctx.close();
        }
    }
}
