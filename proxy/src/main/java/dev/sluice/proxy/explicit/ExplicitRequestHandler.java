package dev.sluice.proxy.explicit;

import dev.sluice.proxy.server.Reads;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.forward.ExchangeControl;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.HopByHop;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.proxy.server.ProxyContext;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import dev.sluice.proxy.server.Draining;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;

/**
 * The request phase of the explicit listener (design.md steps 1–4): for each HTTP/1.x request it
 * identifies the extension, canonicalises the request-target and asks {@link Decider} for a decision.
 * It answers refusals itself and hands allowed requests on, as a {@link ForwardRequest} (absolute-form,
 * plain HTTP) or a {@link ConnectRequest} (authority-form CONNECT). It never dials, and never decides
 * by itself.
 *
 * <p>Answers it sends itself (each with an audit record):
 * <table>
 *   <caption>Refusals of the request phase</caption>
 *   <tr><td>400 malformed_request</td><td>unparseable request, origin-form or asterisk-form
 *       request-target, a version other than HTTP/1.0 and 1.1, a Transfer-Encoding other than
 *       {@code chunked}; the connection closes</td></tr>
 *   <tr><td>400 ambiguous_framing</td><td>Content-Length with Transfer-Encoding, a repeated
 *       Content-Length or Transfer-Encoding, a chunked body whose framing is not exactly RFC 9112
 *       section 7.1 ({@link StrictRequestDecoder}); nothing more of the request is forwarded (the
 *       upstream connection of an exchange already under way is closed before the request's end)
 *       and the connection closes</td></tr>
 *   <tr><td>400 malformed_target</td><td>a request-target that has no canonical form</td></tr>
 *   <tr><td>407 unknown_extension</td><td>no or wrong Proxy-Authorization and no {@code default}
 *       extension; Proxy-Authorization repeated or a list ({@link SingleFields}), whatever the
 *       policy</td></tr>
 *   <tr><td>400 malformed_request</td><td>Host repeated or a list ({@link SingleFields})</td></tr>
 *   <tr><td>403</td><td>the policy denies the name, port, method or path</td></tr>
 *   <tr><td>431 header_too_large</td><td>header block over {@code limits.max_header_bytes}</td></tr>
 *   <tr><td>503 audit_unavailable</td><td>the audit log cannot write (fail closed)</td></tr>
 * </table>
 * A refused request with a body (including one sent with {@code Expect: 100-continue}) is answered
 * at once, without waiting for its body, with {@code Connection: close}; what arrives of the body is
 * dropped and the connection closes when the body ends or after {@link Lingering#LINGER_MILLIS} ms.
 * The same phase serves other listeners and intercepted tunnels through a {@link RequestFront}.
 *
 * <p>Requests on one connection are handled one at a time: while an allowed exchange is in flight,
 * pipelined requests wait (reading is paused), so answers keep the order of requests.
 */
public final class ExplicitRequestHandler extends ChannelInboundHandlerAdapter {

    /** Pipelined messages held while an exchange is in flight before the connection is closed. */
    static final int MAX_QUEUED_MESSAGES = 256;

    private enum State { IDLE, FORWARDING, AWAITING_RESPONSE, DISCARDING, TUNNEL, CLOSED }

    private final ProxyContext context;
    private final RequestFront front;
    private final String listener;
    private final ArrayDeque<Object> queued = new ArrayDeque<>();
    private State state = State.IDLE;
    private boolean responseDoneEarly;
    private boolean closeAfterDiscard;
    private boolean inputShut;
    private boolean draining;
    private String boundExtension;

    /** The {@code listener} label of this listener in audit records and metrics. */
    static final String LISTENER = "explicit";

    public ExplicitRequestHandler(ProxyContext context) {
        this(context, null);
    }

    /**
     * @param context the server's shared context
     * @param front how requests are identified and placed, or null for the explicit proxy
     *     (Proxy-Authorization; absolute-form and CONNECT)
     */
    public ExplicitRequestHandler(ProxyContext context, RequestFront front) {
        this.context = context;
        this.front = front;
        this.listener = front == null ? LISTENER : front.listener();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (state == State.AWAITING_RESPONSE || (!queued.isEmpty() && state != State.TUNNEL)) {
            if (queued.size() >= MAX_QUEUED_MESSAGES) {
                ReferenceCountUtil.release(msg);
                state = State.CLOSED;
                ctx.close();
                return;
            }
            queued.add(msg);
            Reads.setAutoRead(ctx.channel(), false);
            return;
        }
        process(ctx, msg);
    }

    private void process(ChannelHandlerContext ctx, Object msg) {
        switch (state) {
            case TUNNEL -> ctx.fireChannelRead(msg);
            case CLOSED -> ReferenceCountUtil.release(msg);
            case DISCARDING -> {
                boolean last = msg instanceof LastHttpContent;
                ReferenceCountUtil.release(msg);
                if (last) {
                    if (closeAfterDiscard) {
                        state = State.CLOSED;
                        Lingering.close(ctx);
                    } else {
                        idle(ctx);
                        closeIfDrained(ctx);
                    }
                }
            }
            case FORWARDING -> {
                if (msg instanceof HttpContent content && content.decoderResult().isFailure()) {
                    // The body's framing broke (RFC 9112 section 7.1): nothing more of it goes upstream.
                    String detail = StrictRequestDecoder.framingDetail(content.decoderResult().cause());
                    content.release();
                    state = State.CLOSED;
                    ctx.fireChannelRead(new ExchangeControl.RequestBroken(
                            Decision.deny(Reason.AMBIGUOUS_FRAMING, "http.framing"), detail));
                    return;
                }
                boolean last = msg instanceof LastHttpContent;
                ctx.fireChannelRead(msg);
                if (last) {
                    if (responseDoneEarly) {
                        responseDoneEarly = false;
                        idle(ctx);
                        closeIfDrained(ctx);
                    } else if (state == State.FORWARDING) {
                        state = State.AWAITING_RESPONSE;
                    }
                }
            }
            case IDLE -> {
                if (msg instanceof HttpRequest request) {
                    onRequest(ctx, request);
                    if (msg instanceof HttpContent) {
                        // A full request (only produced for invalid input): treat as the request's last content.
                        process(ctx, LastHttpContent.EMPTY_LAST_CONTENT);
                    }
                } else {
                    // Content with no request (cannot happen with the decoder in front): drop it.
                    ReferenceCountUtil.release(msg);
                }
            }
            case AWAITING_RESPONSE -> queued.add(msg);
            default -> throw new IllegalStateException("state: " + state);
        }
    }

    /**
     * Called by the forwarding phase when the response of the current exchange has been written in
     * full. Resumes reading and handles any pipelined request that waited. Call on the event loop.
     *
     * @param ctx this handler's context
     */
    public void exchangeComplete(ChannelHandlerContext ctx) {
        if (state == State.FORWARDING) {
            // The response finished before the request body did (e.g. the origin answered early).
            responseDoneEarly = true;
            return;
        }
        if (state != State.AWAITING_RESPONSE) {
            return;
        }
        idle(ctx);
        while (!queued.isEmpty() && state != State.AWAITING_RESPONSE && state != State.CLOSED) {
            process(ctx, queued.poll());
        }
        if (state == State.CLOSED) {
            releaseQueued();
        }
        if (state != State.AWAITING_RESPONSE) {
            Reads.setAutoRead(ctx.channel(), true);
        }
        closeIfDrained(ctx);
    }

    private void onRequest(ChannelHandlerContext ctx, HttpRequest request) {
        HeaderDeadline deadline = ctx.pipeline().get(HeaderDeadline.class);
        if (deadline != null) {
            deadline.headReceived();
        }
        Policy policy = context.policies().current();
        AuditEvent audit = new AuditEvent(context.audit(), context.clock())
                .listener(listener)
                .client((InetSocketAddress) ctx.channel().remoteAddress());

        DecoderResult result = request.decoderResult();
        if (result.isFailure()) {
            Throwable cause = result.cause();
            if (cause instanceof StrictRequestDecoder.AmbiguousFramingException) {
                audit.method(request.method().name());
                refuse(ctx, request, audit, Decision.deny(Reason.AMBIGUOUS_FRAMING, "http.framing"), true,
                        cause.getMessage());
            } else if (cause instanceof TooLongHttpHeaderException) {
                refuse(ctx, request, audit, Decision.deny(Reason.HEADER_TOO_LARGE, "limits.max_header_bytes"), true,
                        "header block over " + policy.limits().maxHeaderBytes() + " bytes");
            } else if (cause instanceof TooLongHttpLineException || cause instanceof TooLongFrameException) {
                refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, "http.parse"), true,
                        "request line too long");
            } else {
                refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, "http.parse"), true,
                        "unparseable request");
            }
            return;
        }
        audit.method(request.method().name());
        if (!request.protocolVersion().equals(HttpVersion.HTTP_1_1)
                && !request.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, "http.parse"), true,
                    "unsupported HTTP version");
            return;
        }
        String transferEncoding = request.headers().get(HttpHeaderNames.TRANSFER_ENCODING);
        if (transferEncoding != null && !transferEncoding.trim().equalsIgnoreCase("chunked")) {
            refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, "http.framing"), true,
                    "unsupported Transfer-Encoding");
            return;
        }
        Optional<SingleFields.Refusal> repeated = SingleFields.check(request.headers(), front == null);
        if (repeated.isPresent()) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, repeated.get().decision(), true, repeated.get().detail());
            return;
        }
        if (!context.auditLog().healthy()) {
            refuse(ctx, request, audit, Decision.deny(Reason.AUDIT_UNAVAILABLE, "audit"), true,
                    "audit log unavailable");
            return;
        }

        if (front != null) {
            front.describe(audit);
        }

        Optional<Extension> extension = front != null ? front.identify(policy)
                : identify(policy, request.headers().get(HttpHeaderNames.PROXY_AUTHORIZATION));
        if (extension.isEmpty()) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, Decision.deny(Reason.UNKNOWN_EXTENSION, "auth"), false, null);
            return;
        }
        audit.extension(extension.get().name());
        if ((front == null || front.bindsConnection())
                && !bindConnection(ctx, extension.get().name(), policy.limits().maxConnectionsPerExtension())) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, Decision.deny(Reason.CONNECTION_LIMIT, "limits.max_connections_per_extension"),
                    true, null);
            return;
        }

        if (overBudget(policy, extension.get())) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, Decision.deny(Reason.EGRESS_BUDGET, "limits.egress_budget"), false, null);
            return;
        }

        boolean connect = front == null && HttpMethod.CONNECT.equals(request.method());
        Target target;
        HttpTarget httpTarget = null;
        try {
            if (front != null) {
                audit.scheme(front.scheme());
                httpTarget = front.target(request);
                target = httpTarget.target();
                audit.urlPath(httpTarget.pathAndQuery());
            } else if (connect) {
                audit.scheme("https");
                target = TargetParser.parseAuthority(request.uri());
            } else {
                audit.scheme("http");
                String uri = request.uri();
                if (uri.startsWith("/") || uri.equals("*")) {
                    refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, "http.request_target"), false,
                            "origin-form request-target on the proxy listener (expected: absolute-form)");
                    return;
                }
                httpTarget = TargetParser.parseAbsoluteForm(uri);
                target = httpTarget.target();
                audit.urlPath(httpTarget.pathAndQuery());
            }
        } catch (MalformedTargetException e) {
            refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_TARGET, "target"), false, e.getMessage());
            return;
        } catch (MisdirectedRequestException e) {
            refuse(ctx, request, audit, Decision.deny(Reason.HOST_MISMATCH, "intercept.host"), false, e.getMessage());
            return;
        }
        audit.server(target.host(), target.port());

        RequestInfo info = connect ? null : new RequestInfo(request.method().name(), httpTarget.path());
        // A CONNECT's decision also says what the tunnel becomes (blind or intercepted): rules decide it.
        Decision decision = connect ? Decider.decideTunnel(policy, extension.get(), target)
                : Decider.decide(policy, extension.get(), target, info);
        audit.decision(decision.verdict().label()).reason(decision.reason().label()).rule(decision.ruleId());
        if (!decision.permits()) {
            refuse(ctx, request, audit, decision, connect, null);
            return;
        }

        if (connect) {
            audit.tlsMode("tunnel");
            state = State.TUNNEL;
            // The tunnel phase first learns of the CONNECT; then, from here on the client speaks raw
            // bytes: removing the decoder hands it the bytes sent early (a TLS ClientHello right behind
            // the CONNECT header), untouched.
            ctx.fireChannelRead(new ConnectRequest(target, decision, policy, audit,
                    context.traffic(policy, extension.get(), decision), extension.get().name(), LISTENER));
            ctx.pipeline().remove(ExplicitChannelInitializer.DECODER);
            return;
        }

        if (front == null) {
            audit.tlsMode("none");
        }
        HttpRequest upstream = new DefaultHttpRequest(request.protocolVersion(), request.method(),
                httpTarget.pathAndQuery(), request.headers().copy());
        HttpHeaders headers = upstream.headers();
        HopByHop.strip(headers);
        headers.set(HttpHeaderNames.HOST, hostHeader(target, front == null ? 80 : front.defaultPort()));
        if (HttpUtil.isTransferEncodingChunked(request)) {
            HttpUtil.setTransferEncodingChunked(upstream, true);
        }
        state = State.FORWARDING;
        ctx.fireChannelRead(new ForwardRequest(upstream, httpTarget, decision, policy, audit,
                HttpUtil.isKeepAlive(request), context.traffic(policy, extension.get(), decision)));
    }

    private boolean overBudget(Policy policy, Extension extension) {
        return context.budgets().exhausted(extension.name(), policy.limits().egressBudgetBytes(),
                policy.limits().egressBudgetWindow());
    }

    /** Fills in the target of a request refused before its target mattered (best effort, for the record). */
    private static void describeTargetForAudit(HttpRequest request, AuditEvent audit) {
        try {
            if (HttpMethod.CONNECT.equals(request.method())) {
                Target target = TargetParser.parseAuthority(request.uri());
                audit.scheme("https").server(target.host(), target.port());
            } else if (!request.uri().startsWith("/")) {
                HttpTarget target = TargetParser.parseAbsoluteForm(request.uri());
                audit.scheme("http").server(target.target().host(), target.target().port())
                        .urlPath(target.pathAndQuery());
            }
        } catch (MalformedTargetException e) {
            // The record keeps no target; the refusal's reason does not depend on it.
        }
    }

    /**
     * Binds this connection to {@code extension} for the per-extension connection cap; a connection
     * whose requests change identity is moved to the new extension.
     *
     * @return false when the extension is at its cap
     */
    private boolean bindConnection(ChannelHandlerContext ctx, String extension, int max) {
        if (extension.equals(boundExtension)) {
            return true;
        }
        if (!context.connections().tryAcquire(extension, listener, max)) {
            return false;
        }
        if (boundExtension != null) {
            context.connections().release(boundExtension, listener);
        } else {
            // Released when the connection closes, whichever phase owns it then (a tunnel outlives
            // this handler).
            ctx.channel().closeFuture().addListener(f -> unbind());
        }
        boundExtension = extension;
        return true;
    }

    private void unbind() {
        if (boundExtension != null) {
            context.connections().release(boundExtension, listener);
            boundExtension = null;
        }
    }

    private static String hostHeader(Target target, int defaultPort) {
        return target.port() == defaultPort ? target.hostForUri() : target.authority();
    }

    /**
     * Returns the extension named by {@code Proxy-Authorization: Basic name:token} (RFC 7617), the
     * {@code default} extension when the header is absent, or empty when neither applies. Wrong
     * credentials never fall back to {@code default}.
     */
    static Optional<Extension> identify(Policy policy, String authorization) {
        if (authorization == null) {
            return policy.defaultExtension();
        }
        String value = authorization.trim();
        int space = value.indexOf(' ');
        if (space <= 0 || !value.substring(0, space).toLowerCase(Locale.ROOT).equals("basic")) {
            return Optional.empty();
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(value.substring(space + 1).trim()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        int colon = decoded.indexOf(':');
        if (colon <= 0) {
            return Optional.empty();
        }
        return policy.authenticate(decoded.substring(0, colon), decoded.substring(colon + 1));
    }

    private void refuse(ChannelHandlerContext ctx, HttpRequest request, AuditEvent audit, Decision decision,
                        boolean forceClose, String detail) {
        // A failed head closes anyway (and its Content-Length may not even parse).
        boolean hasBody = !request.decoderResult().isFailure()
                && (HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0);
        boolean close = forceClose || hasBody || !HttpUtil.isKeepAlive(request)
                || request.decoderResult().isFailure();
        String text = decision.reasonText();
        FullHttpResponse response = Answers.refusal(ctx.alloc(), decision.reason(), text, close);
        audit.decision(decision.verdict().label())
                .reason(decision.reason().label())
                .rule(decision.ruleId())
                .statusCode(decision.reason().httpStatus());
        if (detail != null) {
            audit.error(detail);
        }
        audit.emit();
        if (close && hasBody && !request.decoderResult().isFailure()) {
            // The body is still coming: read and drop it, then close (a close now would reset the
            // connection and could lose the answer on the client's side).
            state = State.DISCARDING;
            closeAfterDiscard = true;
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            Lingering.closeLater(ctx);
        } else if (close) {
            state = State.CLOSED;
            closeAfterDiscard = true;
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        } else {
            state = State.DISCARDING;
            closeAfterDiscard = false;
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof HeaderDeadline.HeaderTimeoutEvent) {
            onHeaderTimeout(ctx);
            return;
        }
        if (evt instanceof Draining && state != State.TUNNEL) {
            draining = true;
            ctx.fireUserEventTriggered(evt);
            closeIfDrained(ctx);
            return;
        }
        if (evt instanceof IdleStateEvent && state != State.TUNNEL) {
            HeaderDeadline deadline = ctx.pipeline().get(HeaderDeadline.class);
            if (state == State.IDLE && deadline != null && deadline.headStarted()) {
                // A request head began and stalled: the connection's only record says why it ended.
                recordStall(ctx, Reason.IDLE_TIMEOUT, "limits.idle_timeout", "request head incomplete: no byte for "
                        + context.policies().current().limits().idleTimeout().toMillis() + " ms");
            }
            // Let the forwarding phase note it on the exchange's record, then close.
            ctx.fireUserEventTriggered(evt);
            state = State.CLOSED;
            ctx.close();
            return;
        }
        if (evt instanceof ChannelInputShutdownEvent && state != State.TUNNEL) {
            // The client sent FIN: finish the exchange in progress (and any request already read),
            // then close.
            inputShut = true;
            closeIfDrained(ctx);
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    private void onHeaderTimeout(ChannelHandlerContext ctx) {
        if (state != State.IDLE) {
            return;
        }
        Policy policy = context.policies().current();
        recordStall(ctx, Reason.HEADER_TIMEOUT, "limits.header_timeout",
                "no complete request head within " + policy.limits().headerTimeout().toMillis() + " ms");
        state = State.CLOSED;
        ctx.close();
    }

    /** Writes the record of a connection closed while it waited for a request head. */
    private void recordStall(ChannelHandlerContext ctx, Reason reason, String rule, String error) {
        AuditEvent audit = new AuditEvent(context.audit(), context.clock())
                .listener(listener)
                .client((InetSocketAddress) ctx.channel().remoteAddress())
                .decision("deny")
                .reason(reason.label())
                .rule(rule)
                .error(error);
        if (boundExtension != null) {
            audit.extension(boundExtension);
        }
        audit.emit();
    }

    private void closeIfDrained(ChannelHandlerContext ctx) {
        if ((inputShut || draining) && queued.isEmpty() && (state == State.IDLE || state == State.DISCARDING)) {
            state = State.CLOSED;
            ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** Waits for the next request head (re-arming the header timeout on its first byte). */
    private void idle(ChannelHandlerContext ctx) {
        state = State.IDLE;
        HeaderDeadline deadline = ctx.pipeline().get(HeaderDeadline.class);
        if (deadline != null) {
            deadline.awaitNextHead();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        releaseQueued();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (state == State.TUNNEL) {
            // Hand anything still queued to the next phase, in order.
            while (!queued.isEmpty()) {
                Object msg = queued.poll();
                if (msg instanceof ByteBuf) {
                    ctx.fireChannelRead(msg);
                } else {
                    ReferenceCountUtil.release(msg);
                }
            }
        }
        releaseQueued();
    }

    private void releaseQueued() {
        while (!queued.isEmpty()) {
            ReferenceCountUtil.release(queued.poll());
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // Never a stack trace on the wire: close. The exchange's own audit record notes the error.
        ctx.fireExceptionCaught(cause);
    }
}
