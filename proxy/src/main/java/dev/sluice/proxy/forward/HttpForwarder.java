package dev.sluice.proxy.forward;

import dev.sluice.proxy.server.Reads;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.dial.DialFailure;
import dev.sluice.proxy.dial.Dialed;
import dev.sluice.proxy.explicit.ExplicitRequestHandler;
import dev.sluice.proxy.explicit.ForwardRequest;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.HopByHop;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.certs.PinMismatchException;
import dev.sluice.proxy.intercept.InterceptionTls;
import dev.sluice.proxy.intercept.UpstreamTls;
import dev.sluice.proxy.server.ByteCounter;
import dev.sluice.rules.target.Target;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import javax.net.ssl.SSLException;
import dev.sluice.proxy.server.Draining;
import io.netty.handler.timeout.IdleStateEvent;
import dev.sluice.proxy.server.ProxyContext;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Policy;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.util.ArrayDeque;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The forwarding phase for plain HTTP on one downstream connection: dials (through the safe dialer)
 * or reuses the upstream connection, streams the request body up and the response down as
 * {@link HttpContent} chunks (never buffering a whole body), and writes one audit record per exchange.
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
 * a response that breaks off mid-body, or whose body framing is malformed (a bad chunk), closes the
 * downstream connection without ending the body, so the client never takes a cut body for a whole one
 * (before the response head, a malformed response is 502 {@code upstream_connect_failed}). A request
 * whose own chunked framing breaks mid-body ({@link ExchangeControl.RequestBroken}) closes the upstream
 * connection before the request's end and is answered 400 {@code ambiguous_framing}.
 */
public final class HttpForwarder extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(HttpForwarder.class);

    /** Largest response header block accepted from an origin, in bytes. */
    static final int MAX_RESPONSE_HEADER_BYTES = 65_536;

    private final ProxyContext context;
    private final UpstreamTls upstreamTls;
    private ChannelHandlerContext ctx;
    private Throwable upstreamFailure;
    private String upstreamPin;

    private Channel upstream;
    private ByteCounter upstreamCounter;
    private String upstreamAuthority;
    private Policy upstreamPolicy;

    private ForwardRequest current;
    private boolean dialing;
    private final ArrayDeque<HttpContent> pendingBody = new ArrayDeque<>();
    private boolean requestComplete;
    private boolean responseStarted;
    private boolean interimResponse;
    private boolean upstreamKeepAlive;
    private boolean closeDownstream;
    private boolean lingering;

    public HttpForwarder(ProxyContext context) {
        this(context, null);
    }

    /**
     * @param upstreamTls for requests inside an intercepted tunnel: how upstream connections speak
     *                    TLS (PKIX, hostname, pins); null for plain HTTP
     */
    public HttpForwarder(ProxyContext context, UpstreamTls upstreamTls) {
        this.context = context;
        this.upstreamTls = upstreamTls;
    }

    /**
     * Takes over an upstream connection that was already dialled and checked (the CONNECT's), for the
     * requests of an intercepted tunnel: adds TLS (when this forwarder has it), the HTTP codec and the
     * response relay, and starts reading. Call on the event loop, before the first request.
     */
    public void adopt(Channel channel, ByteCounter counter, Target target, Policy policy) {
        installUpstreamHandlers(channel, target);
        upstream = channel;
        upstreamCounter = counter;
        upstreamAuthority = target.authority();
        upstreamPolicy = policy;
        upstreamFailure = null;
        Reads.setAutoRead(channel, true);
    }

    private void installUpstreamHandlers(Channel ch, Target target) {
        if (upstreamTls != null) {
            ch.pipeline().addLast("tls", upstreamTls.newHandler(ch.alloc(), target.host(), target.port()));
        }
        ch.pipeline().addLast("codec", new HttpClientCodec(8192, MAX_RESPONSE_HEADER_BYTES, 65_536));
        ch.pipeline().addLast("response", new UpstreamResponseHandler());
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            start(request);
        } else if (msg instanceof ExchangeControl.Refuse refuse) {
            current = refuse.request();
            requestComplete = false;
            responseStarted = false;
            closeDownstream = !refuse.request().downstreamKeepAlive();
            refuse(refuse.decision(), refuse.detail());
        } else if (msg instanceof ExchangeControl.Abort abort) {
            if (current != null && !responseStarted) {
                closeUpstream();
                refuse(abort.decision(), abort.detail());
            } else if (current != null) {
                current.audit().error(abort.detail());
                abortExchange(abort.decision());
            }
        } else if (msg instanceof ExchangeControl.RequestBroken broken) {
            onRequestBroken(broken);
        } else if (msg instanceof HttpContent content) {
            onRequestContent(content);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void start(ForwardRequest request) {
        current = request;
        requestComplete = false;
        responseStarted = false;
        interimResponse = false;
        upstreamKeepAlive = false;
        closeDownstream = !request.downstreamKeepAlive();
        String authority = request.target().target().authority();
        if (upstream != null && upstream.isActive() && authority.equals(upstreamAuthority)
                && request.policy() == upstreamPolicy) {
            upstreamCounter.attach(request.audit(), request.traffic());
            request.audit().peerAddress(peerAddress(upstream));
            if (upstreamPin != null) {
                request.audit().pin(upstreamPin);
            }
            upstream.writeAndFlush(request.request()).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            return;
        }
        closeUpstream();
        dialing = true;
        Reads.setAutoRead(ctx.channel(), false);
        ByteCounter counter = new ByteCounter();
        counter.attach(request.audit(), request.traffic());
        Future<Dialed> dial = context.dialer().dial(ctx.channel().eventLoop(), request.policy(), request.decision(),
                request.target().target(), new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast("bytes", counter);
                        installUpstreamHandlers(ch, request.target().target());
                    }
                });
        dial.addListener((Future<Dialed> f) -> onDialed(request, counter, f));
    }

    private void onDialed(ForwardRequest request, ByteCounter counter, Future<Dialed> f) {
        dialing = false;
        if (current != request || !ctx.channel().isActive()) {
            if (f.isSuccess()) {
                f.getNow().channel().close();
            }
            releasePending();
            return;
        }
        if (!f.isSuccess()) {
            Throwable cause = f.cause();
            Decision denial = cause instanceof DialFailure failure
                    ? failure.decision() : Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, "network.connect");
            releasePending();
            refuse(denial, cause instanceof DialFailure ? cause.getMessage() : "connect failed");
            return;
        }
        Dialed dialed = f.getNow();
        upstream = dialed.channel();
        upstreamFailure = null;
        upstreamPin = null;
        upstreamCounter = counter;
        upstreamAuthority = request.target().target().authority();
        upstreamPolicy = request.policy();
        request.audit().peerAddress(dialed.remote().getAddress().getHostAddress());
        upstream.write(request.request()).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        while (!pendingBody.isEmpty()) {
            upstream.write(pendingBody.poll()).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
        upstream.flush();
        Reads.setAutoRead(upstream, true);
        if (!requestComplete) {
            Reads.setAutoRead(ctx.channel(), upstream.isWritable());
        }
    }

    /** The request body's framing broke: the origin must never see the request end. */
    private void onRequestBroken(ExchangeControl.RequestBroken broken) {
        // Nothing more of the request will be read, and the connection is not reused.
        requestComplete = true;
        closeDownstream = true;
        releasePending();
        closeUpstream();
        if (current == null) {
            ctx.close();
        } else if (!responseStarted) {
            refuse(broken.decision(), broken.detail());
        } else {
            current.audit().error(broken.detail());
            abortExchange(broken.decision());
        }
    }

    private void onRequestContent(HttpContent content) {
        if (content instanceof LastHttpContent) {
            requestComplete = true;
        }
        if (current == null) {
            // The exchange already ended (refused or answered early): the rest of the body is dropped.
            content.release();
            if (lingering && content instanceof LastHttpContent) {
                lingering = false;
                Lingering.close(ctx);
            }
            return;
        }
        if (dialing) {
            pendingBody.add(content);
            return;
        }
        if (upstream == null || !upstream.isActive()) {
            content.release();
            return;
        }
        upstream.writeAndFlush(content).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        if (!requestComplete && !upstream.isWritable()) {
            Reads.setAutoRead(ctx.channel(), false);
        }
    }

    // ---- responses from upstream --------------------------------------------------------------

    private void onResponse(Channel from, HttpObject msg) {
        if (from != upstream || current == null) {
            // Bytes from an origin with no exchange in progress: it is not speaking HTTP/1.1 correctly.
            ReferenceCountUtil.release(msg);
            from.close();
            return;
        }
        if (msg instanceof HttpResponse response) {
            onResponseHead(response);
        }
        if (msg instanceof HttpContent content) {
            onResponseContent(content);
        }
    }

    private void onResponseHead(HttpResponse response) {
        AuditEvent audit = current.audit();
        if (response.decoderResult().isFailure()) {
            ReferenceCountUtil.release(response);
            audit.error("malformed response from upstream");
            abortExchange(Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, "network.upstream"));
            return;
        }
        int code = response.status().code();
        if (code == 101) {
            audit.error("upgrade is not supported through the proxy");
            abortExchange(Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, "network.upstream"));
            return;
        }
        interimResponse = code >= 100 && code < 200;
        boolean originKeepAlive = HttpUtil.isKeepAlive(response);
        HopByHop.strip(response.headers());
        if (interimResponse) {
            ctx.write(response);
            return;
        }
        responseStarted = true;
        audit.statusCode(code);
        if (current.responseScan() != null) {
            current.responseScan().onHead(response);
        }
        upstreamKeepAlive = originKeepAlive;
        HttpVersion downstreamVersion = current.request().protocolVersion();
        boolean bodyless = HttpMethod.HEAD.equals(current.request().method()) || code == 204 || code == 304;
        boolean chunked = HttpUtil.isTransferEncodingChunked(response);
        boolean lengthKnown = HttpUtil.isContentLengthSet(response);
        if (!bodyless && !chunked && !lengthKnown) {
            // Delimited by the origin closing: never reuse that connection.
            upstreamKeepAlive = false;
            if (downstreamVersion.equals(HttpVersion.HTTP_1_1)) {
                HttpUtil.setTransferEncodingChunked(response, true);
            } else {
                closeDownstream = true;
            }
        } else if (chunked && downstreamVersion.equals(HttpVersion.HTTP_1_0)) {
            // An HTTP/1.0 client cannot read chunked framing: send the body delimited by close.
            HttpUtil.setTransferEncodingChunked(response, false);
            closeDownstream = true;
        }
        response.setProtocolVersion(HttpVersion.HTTP_1_1);
        if (closeDownstream) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (downstreamVersion.equals(HttpVersion.HTTP_1_0)) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        ctx.write(response);
    }

    private void onResponseContent(HttpContent content) {
        if (content.decoderResult().isFailure()) {
            // A malformed body (e.g. a bad chunk-size line): never end it downstream as if it were whole.
            content.release();
            current.audit().error("malformed response body from upstream");
            abortExchange(Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, "network.upstream"));
            return;
        }
        boolean last = content instanceof LastHttpContent;
        if (!interimResponse && current != null && current.responseScan() != null) {
            current.responseScan().onContent(content.content(), last, current.audit());
        }
        ctx.writeAndFlush(content).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        if (upstream != null && !ctx.channel().isWritable()) {
            Reads.setAutoRead(upstream, false);
        }
        if (!last) {
            return;
        }
        if (interimResponse) {
            interimResponse = false;
            return;
        }
        completeExchange();
    }

    private void completeExchange() {
        ForwardRequest done = current;
        current = null;
        done.audit().emit();
        if (!upstreamKeepAlive || !requestComplete) {
            closeUpstream();
        } else if (upstreamCounter != null) {
            upstreamCounter.attach(null, null);
        }
        if (closeDownstream) {
            ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        ChannelHandlerContext requestPhase = ctx.pipeline().context(ExplicitRequestHandler.class);
        if (requestPhase != null) {
            ((ExplicitRequestHandler) requestPhase.handler()).exchangeComplete(requestPhase);
        }
    }

    /** Ends the exchange in progress because the upstream side failed. */
    private void abortExchange(Decision failure) {
        closeUpstream();
        if (current == null) {
            return;
        }
        if (!responseStarted) {
            refuse(failure, null);
            return;
        }
        // Part of the response is already on its way: the only honest signal left is closing.
        AuditEvent audit = current.audit();
        current = null;
        audit.emit();
        ctx.close();
    }

    private void refuse(Decision denial, String detail) {
        ForwardRequest request = current;
        current = null;
        boolean close = closeDownstream || !requestComplete;
        FullHttpResponse answer = Answers.refusal(ctx.alloc(), denial.reason(), denial.reasonText(), close);
        AuditEvent audit = request.audit();
        audit.decision(denial.verdict().label()).reason(denial.reason().label()).rule(denial.ruleId())
                .statusCode(denial.reason().httpStatus());
        if (detail != null && audit.errorOrNull() == null) {
            audit.error(detail);
        }
        audit.emit();
        if (close && !requestComplete) {
            // The request body is still coming: drop it as it arrives, close when it ends (or later).
            lingering = true;
            ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            Lingering.closeLater(ctx);
            return;
        }
        if (close) {
            ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        ChannelHandlerContext requestPhase = ctx.pipeline().context(ExplicitRequestHandler.class);
        if (requestPhase != null) {
            ((ExplicitRequestHandler) requestPhase.handler()).exchangeComplete(requestPhase);
        }
    }

    private void onUpstreamInactive(Channel channel) {
        if (channel != upstream) {
            return;
        }
        upstream = null;
        upstreamCounter = null;
        if (current != null && !dialing) {
            Throwable failure = upstreamFailure;
            current.audit().error(failure == null ? "upstream closed before the response ended"
                    : "upstream: " + failure.getClass().getSimpleName()
                    + (failure.getMessage() == null ? "" : ": " + failure.getMessage()));
            abortExchange(failureDecision(failure));
        }
    }

    /** Maps an upstream failure to the reason the client is told: a pin, TLS, or anything else. */
    private static Decision failureDecision(Throwable cause) {
        if (cause != null && PinMismatchException.find(cause).isPresent()) {
            return Decision.deny(Reason.PIN_MISMATCH, "inspect.pins");
        }
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SSLException) {
                return Decision.deny(Reason.UPSTREAM_TLS_FAILED, "network.tls");
            }
        }
        return Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, "network.upstream");
    }

    private void onUpstreamHandshake(Channel channel, SslHandshakeCompletionEvent event) {
        if (channel != upstream) {
            return;
        }
        if (!event.isSuccess()) {
            upstreamFailure = event.cause();
            return;
        }
        SslHandler tls = channel.pipeline().get(SslHandler.class);
        upstreamPin = tls == null ? null : InterceptionTls.pinCheck(tls.engine().getSession())
                .map(check -> check.result().label()).orElse("none");
        if (current != null && upstreamPin != null) {
            current.audit().pin(upstreamPin);
        }
    }

    private void closeUpstream() {
        if (upstream != null) {
            Channel old = upstream;
            upstream = null;
            upstreamCounter = null;
            upstreamAuthority = null;
            upstreamPolicy = null;
            old.close();
        }
    }

    private void releasePending() {
        while (!pendingBody.isEmpty()) {
            pendingBody.poll().release();
        }
    }

    private static String peerAddress(Channel channel) {
        return channel.remoteAddress() instanceof java.net.InetSocketAddress a
                ? a.getAddress().getHostAddress() : String.valueOf(channel.remoteAddress());
    }

    // ---- downstream events --------------------------------------------------------------------

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && upstream != null) {
            Reads.setAutoRead(upstream, true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (current != null) {
            if (current.audit().errorOrNull() == null) {
                // An exchange cut by a timeout already says so (idle_timeout); keep that.
                current.audit().error("downstream closed before the exchange ended");
            }
            current.audit().emit();
            current = null;
        }
        releasePending();
        closeUpstream();
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent && current != null) {
            current.audit().error("idle_timeout: no byte either way for "
                    + current.policy().limits().idleTimeout().toMillis() + " ms");
        } else if (evt instanceof Draining) {
            // Shutting down: the response in progress (if its head is not out yet) says close.
            closeDownstream = true;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("downstream {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        if (current != null) {
            current.audit().error("downstream error: " + cause.getClass().getSimpleName());
        }
        ctx.close();
    }

    /** Relays the upstream side's events to the forwarder, on the same event loop. */
    private final class UpstreamResponseHandler extends ChannelInboundHandlerAdapter {

        @Override
        public void channelRead(ChannelHandlerContext uctx, Object msg) {
            if (msg instanceof HttpObject object) {
                onResponse(uctx.channel(), object);
            } else {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext uctx) {
            if (uctx.channel().isWritable() && uctx.channel() == upstream && !requestComplete) {
                Reads.setAutoRead(ctx.channel(), true);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext uctx) {
            onUpstreamInactive(uctx.channel());
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
            if (uctx.channel() == upstream && upstreamFailure == null) {
                upstreamFailure = cause;
            }
            uctx.close();
        }
    }
}
