package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.ExchangeSequencer;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.MisdirectedRequestException;
import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.proxy.http.StrictRequestDecoder;

import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.HopByHop;
import dev.sluice.proxy.http.WebSocketUpgrade;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.policy.WebSocketMode;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.proxy.http.Refusals;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.RequestInfo;
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
import dev.sluice.proxy.core.Draining;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.ssl.SslCloseCompletionEvent;
import dev.sluice.proxy.exchange.ExchangeControl;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

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
 *   <tr><td>501 upgrade_not_supported</td><td>an allowed request that asks for a protocol upgrade
 *       other than a well-formed WebSocket handshake ({@link WebSocketUpgrade#problem}: h2c,
 *       {@code TLS/1.0}, an unknown token, {@code upgrade} named in {@code Connection} alone);
 *       nothing is forwarded</td></tr>
 *   <tr><td>403 websocket_refused</td><td>a WebSocket handshake to an intercepted host whose
 *       {@code websocket} is {@code refuse}</td></tr>
 *   <tr><td>503 audit_unavailable</td><td>the audit log cannot write (fail closed)</td></tr>
 * </table>
 * A refused request with a body (including one sent with {@code Expect: 100-continue}) is answered
 * at once, without waiting for its body, with {@code Connection: close}; what arrives of the body is
 * dropped and the connection closes when the body ends or after {@link ProxyContext#refusalLinger}.
 * The same phase serves other listeners and intercepted tunnels through a {@link RequestFront}.
 *
 * <p>Requests on one connection are handled one at a time: while an allowed exchange is in flight,
 * pipelined requests wait (reading is paused), so answers keep the order of requests.
 *
 * <p>Half-close: a FIN (or, in an intercepted tunnel, a TLS close_notify) after a complete request lets
 * its answer finish, then the connection closes. One while the request body is still expected ends the
 * exchange at once ({@link ExchangeControl.ClientClosedMidBody}: upstream closed, record with
 * {@code error: client_closed_mid_body}, nothing more to the client, connection closed, slot freed).
 * A body chunk the decoder rejects is never passed on; a broken chunked body (RFC 9112 section 7.1)
 * aborts the exchange with 400 {@code malformed_request} when no answer has started.
 */
public final class ExplicitRequestHandler extends ChannelInboundHandlerAdapter implements ExchangeSequencer {

    /** Pipelined messages held while an exchange is in flight before the connection is closed. */
    static final int MAX_QUEUED_MESSAGES = 256;

    private enum State { IDLE, HELD, FORWARDING, AWAITING_RESPONSE, DISCARDING, TUNNEL, CLOSED }

    /**
     * Queued in place of the end of the client's input (FIN, or close_notify in an intercepted tunnel)
     * that arrives behind queued messages (or while a request is held for approval): it takes effect
     * after them, in order. The epoll transport
     * reports a FIN, and reads the bytes before it, even while reading is paused, so the end of input
     * can overtake pipelined requests that wait for the exchange in flight; NIO reads neither until
     * reading resumes.
     */
    private static final Object INPUT_ENDED = new Object();

    private final ProxyContext context;
    private final RequestFront front;
    private final Listener listener;
    private final ArrayDeque<Object> queued = new ArrayDeque<>();
    private State state = State.IDLE;
    private boolean responseDoneEarly;
    private boolean closeAfterDiscard;
    private boolean inputShut;
    private boolean draining;
    private final RequestAdmission admission;

    /** The {@code listener} label of the explicit listener in audit records and metrics. */
    static final Listener LISTENER = ExplicitFront.LISTENER;

    /** Rule id of the refusal of a request that asks for a protocol upgrade. */
    static final String RULE_UPGRADE = BuiltinRules.HTTP_UPGRADE;

    /** Rule id of the refusal of a WebSocket upgrade by an intercepted host's {@code websocket} key. */
    static final String RULE_WEBSOCKET = BuiltinRules.INSPECT_WEBSOCKET;

    /** The request phase of the explicit listener ({@link ExplicitFront}). */
    public ExplicitRequestHandler(ProxyContext context) {
        this(context, new ExplicitFront());
    }

    /**
     * @param context the server's shared context
     * @param front how requests are identified and placed: {@link ExplicitFront} on the explicit listener,
     *     the transparent listener's front, or an intercepted tunnel's
     */
    public ExplicitRequestHandler(ProxyContext context, RequestFront front) {
        this.context = context;
        this.front = java.util.Objects.requireNonNull(front, "front");
        this.listener = front.listener();
        this.admission = new RequestAdmission(context, listener);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (state == State.AWAITING_RESPONSE || state == State.HELD || (!queued.isEmpty() && state != State.TUNNEL)) {
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
        if (msg == INPUT_ENDED) {
            inputEnded(ctx);
            return;
        }
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
                    // Never forwarded: the encoder would end the body upstream as if it were whole.
                    Throwable cause = content.decoderResult().cause();
                    content.release();
                    if (cause instanceof PrematureChannelClosureException) {
                        clientClosedMidBody(ctx);
                    } else {
                        malformedBody(ctx, StrictRequestDecoder.framingDetail(cause));
                    }
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
            case AWAITING_RESPONSE, HELD -> queued.add(msg);
            default -> throw new IllegalStateException("state: " + state);
        }
    }

    @Override
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
        // A queued request may be held for approval: the replay stops there, as after a hold.
        while (!queued.isEmpty() && state != State.AWAITING_RESPONSE && state != State.CLOSED
                && state != State.HELD) {
            process(ctx, queued.poll());
        }
        if (state == State.CLOSED) {
            releaseQueued();
        }
        if (state != State.AWAITING_RESPONSE && state != State.HELD) {
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
        if (!result.isFailure() || result.cause() instanceof StrictRequestDecoder.AmbiguousFramingException) {
            audit.method(request.method().name());
        }
        Refusal refusal = DecoderFailures.of(request, policy.limits().maxHeaderBytes());
        if (refusal == null) {
            // One identity or none: repeated Proxy-Authorization or Host (SingleFields).
            refusal = SingleFields.check(request.headers(), front.identifiesByProxyAuthorization());
            if (refusal != null) {
                describeTargetForAudit(request, audit);
            }
        }
        if (refusal == null) {
            refusal = admission.auditHealth();
            if (refusal != null) {
                // The record waits in the writer's queue until the disk takes it again: say what was refused.
                describeRefused(request, audit);
            }
        }
        if (refusal != null) {
            // The record still names who sent it when the head was parsed whole (a framing refusal, a
            // repeated Host) and carries one identity; a repeated Proxy-Authorization names no one.
            boolean headParsed = !result.isFailure()
                    || result.cause() instanceof StrictRequestDecoder.AmbiguousFramingException;
            if (headParsed && refusal.decision().reason() != Reason.UNKNOWN_EXTENSION
                    && SingleFields.identitySingle(request.headers())) {
                front.identify(policy, request).ifPresent(e -> audit.extension(e.name()));
            }
            refuse(ctx, request, audit, refusal.decision(), refusal.close(), refusal.detail());
            return;
        }

        front.describe(audit);
        Optional<Extension> extension = front.identify(policy, request);
        if (extension.isEmpty()) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.AUTH), false, null);
            return;
        }
        audit.extension(extension.get().name());
        refusal = admission.admit(ctx.channel(), extension.get(), policy, front.bindsConnection());
        if (refusal != null) {
            describeTargetForAudit(request, audit);
            refuse(ctx, request, audit, refusal.decision(), refusal.close(), refusal.detail());
            return;
        }

        boolean connect = front.opensTunnel(request);
        Target target;
        HttpTarget httpTarget = null;
        audit.scheme(front.scheme(request));
        try {
            if (connect) {
                target = front.tunnelTarget(request);
            } else {
                httpTarget = front.target(request);
                target = httpTarget.target();
                audit.urlPath(httpTarget.pathAndQuery());
            }
        } catch (OriginFormException e) {
            refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_REQUEST_TARGET), false,
                    e.getMessage());
            return;
        } catch (MalformedTargetException e) {
            refuse(ctx, request, audit, Decision.deny(Reason.MALFORMED_TARGET, BuiltinRules.TARGET), false, e.getMessage());
            return;
        } catch (MisdirectedRequestException e) {
            refuse(ctx, request, audit, Decision.deny(Reason.HOST_MISMATCH, BuiltinRules.INTERCEPT_HOST), false, e.getMessage());
            return;
        }
        audit.server(target.host(), target.port());

        RequestInfo info = connect ? null : new RequestInfo(request.method().name(), httpTarget.path());
        // A CONNECT's decision also says what the tunnel becomes (blind or intercepted): rules decide it.
        Decision decision = connect ? Decider.decideTunnel(policy, extension.get(), target)
                : Decider.decide(policy, extension.get(), target, info);
        audit.decision(decision);
        if (!decision.permits()) {
            if (policy.approvals() != null && context.approvals() != null && Decider.approvable(decision, target)) {
                hold(ctx, request, audit, policy, extension.get(), target, httpTarget, info, connect, decision);
                return;
            }
            refuse(ctx, request, audit, decision, connect, null);
            return;
        }
        proceed(ctx, request, audit, policy, extension.get(), target, httpTarget, connect, decision);
    }

    /**
     * Holds a request that missed the allowlist while the {@code approvals} backend is asked
     * ({@link ApprovalHold}): reading stops and whatever arrives is queued; the answer comes back on this
     * channel's event loop, where the request is forwarded (granted) or refused with the miss's reason
     * (denied, timeout), then the queue is replayed. The connection keeps its slot under
     * {@code limits.max_connections_per_extension} while held.
     */
    private void hold(ChannelHandlerContext ctx, HttpRequest request, AuditEvent audit, Policy policy,
                      Extension extension, Target target, @Nullable HttpTarget httpTarget, @Nullable RequestInfo info,
                      boolean connect, Decision decision) {
        state = State.HELD;
        Reads.setAutoRead(ctx.channel(), false);
        if (connect) {
            // From here on the client speaks raw bytes (if it speaks before the answer at all).
            ctx.pipeline().remove(HttpPipeline.DECODER);
        }
        ApprovalHold.ask(ctx, context.approvals(), policy.approvals(), extension.name(), target, info, audit, decision,
                new ApprovalHold.Resumption() {
                    @Override
                    public boolean held() {
                        return state == State.HELD;
                    }

                    @Override
                    public void granted(Decision granted) {
                        state = State.IDLE;
                        proceed(ctx, request, audit, policy, extension, target, httpTarget, connect, granted);
                        afterHold(ctx);
                    }

                    @Override
                    public void denied() {
                        state = State.IDLE;
                        refuse(ctx, request, audit, decision, connect, null);
                        afterHold(ctx);
                    }

                    @Override
                    public void abandoned() {
                        state = State.CLOSED;
                        releaseQueued();
                    }
                });
    }

    /** Replays what was queued while a request was held, once it went on or was refused. */
    private void afterHold(ChannelHandlerContext ctx) {
        while (!queued.isEmpty() && state != State.AWAITING_RESPONSE && state != State.CLOSED
                && state != State.HELD) {
            process(ctx, queued.poll());
        }
        if (state == State.CLOSED) {
            releaseQueued();
        }
        if (state != State.AWAITING_RESPONSE && state != State.CLOSED) {
            Reads.setAutoRead(ctx.channel(), true);
        }
    }

    /** Goes on with a request the policy (or an approval) allows: a tunnel, or a request to forward. */
    private void proceed(ChannelHandlerContext ctx, HttpRequest request, AuditEvent audit, Policy policy,
                         Extension extensionValue, Target target, @Nullable HttpTarget httpTarget, boolean connect,
                         Decision decision) {
        Optional<Extension> extension = Optional.of(extensionValue);
        String websocket = null;
        if (!connect && HopByHop.upgradeRequested(request.headers())) {
            // Never strip the upgrade and forward the rest: the origin would see a plain request and the
            // client an answer it cannot explain. Only a WebSocket handshake goes on.
            String problem = WebSocketUpgrade.problem(request);
            if (problem != null) {
                String protocols = HopByHop.upgradeProtocols(request.headers());
                refuse(ctx, request, audit, Decision.deny(Reason.UPGRADE_NOT_SUPPORTED, RULE_UPGRADE), false,
                        "protocol upgrade" + (protocols.isEmpty() ? "" : " to " + protocols) + " is not supported: "
                                + problem);
                return;
            }
            Optional<InspectedHost> inspected = front.intercepted(policy);
            WebSocketMode mode = inspected.map(InspectedHost::websocket).orElse(null);
            Decision upgrade = Decider.decideWebSocket(mode);
            if (!upgrade.permits()) {
                refuse(ctx, request, audit, upgrade, false,
                        "inspect." + inspected.get().host() + ".websocket: refuse");
                return;
            }
            websocket = mode == null ? "plain" : mode.label();
        }

        if (connect) {
            audit.tlsMode(TlsMode.TUNNEL);
            state = State.TUNNEL;
            // The tunnel phase first learns of the CONNECT; then, from here on the client speaks raw
            // bytes: removing the decoder hands it the bytes sent early (a TLS ClientHello right behind
            // the CONNECT header), untouched.
            ctx.fireChannelRead(new ConnectRequest(target, decision, policy, audit,
                    context.traffic(policy, extension.get(), decision), extension.get().name(), listener,
                    request.headers().get(HttpHeaderNames.ACCEPT)));
            if (ctx.pipeline().get(HttpPipeline.DECODER) != null) {
                ctx.pipeline().remove(HttpPipeline.DECODER);
            }
            return;
        }

        front.describeForwarded(audit);
        HttpRequest upstream = new DefaultHttpRequest(request.protocolVersion(), request.method(),
                httpTarget.pathAndQuery(), request.headers().copy());
        HttpHeaders headers = upstream.headers();
        HopByHop.strip(headers);
        headers.set(HttpHeaderNames.HOST, hostHeader(target, front.defaultPort()));
        if (HttpUtil.isTransferEncodingChunked(request)) {
            HttpUtil.setTransferEncodingChunked(upstream, true);
        }
        if (websocket != null) {
            WebSocketUpgrade.restore(request.headers(), headers);
        }
        state = State.FORWARDING;
        ForwardRequest forward = new ForwardRequest(upstream, httpTarget, decision, policy, audit,
                HttpUtil.isKeepAlive(request), context.traffic(policy, extension.get(), decision));
        ctx.fireChannelRead(websocket == null ? forward : forward.withWebSocket(websocket));
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
     * Fills the record of a request refused before its decision with what this front can place of it
     * (target and path), without deciding anything; a target that does not place leaves the record without one.
     */
    private void describeRefused(HttpRequest request, AuditEvent audit) {
        front.describe(audit);
        try {
            if (front.opensTunnel(request)) {
                Target target = front.tunnelTarget(request);
                audit.scheme(front.scheme(request)).server(target.host(), target.port());
            } else {
                HttpTarget target = front.target(request);
                audit.scheme(front.scheme(request)).server(target.target().host(), target.target().port())
                        .urlPath(target.pathAndQuery());
            }
        } catch (MalformedTargetException | MisdirectedRequestException | OriginFormException e) {
            // The record keeps no target; the refusal's reason does not depend on it.
        }
    }

    private static String hostHeader(Target target, int defaultPort) {
        return target.port() == defaultPort ? target.hostForUri() : target.authority();
    }

    private void refuse(ChannelHandlerContext ctx, HttpRequest request, AuditEvent audit, Decision decision,
                        boolean forceClose, @Nullable String detail) {
        // A failed head closes anyway (and its Content-Length may not even parse).
        boolean hasBody = !request.decoderResult().isFailure()
                && (HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0);
        boolean close = forceClose || hasBody || !HttpUtil.isKeepAlive(request)
                || request.decoderResult().isFailure();
        Refusals.Ending ending;
        if (close && hasBody && !request.decoderResult().isFailure()) {
            // The body is still coming: read and drop it, then close (a close now would reset the
            // connection and could lose the answer on the client's side).
            state = State.DISCARDING;
            closeAfterDiscard = true;
            ending = Refusals.Ending.CLOSE_AFTER_BODY;
        } else if (close) {
            state = State.CLOSED;
            closeAfterDiscard = true;
            ending = Refusals.Ending.CLOSE;
        } else {
            state = State.DISCARDING;
            closeAfterDiscard = false;
            ending = Refusals.Ending.KEEP_OPEN;
        }
        Refusals.refuse(ctx, audit, decision, detail, request.headers().get(HttpHeaderNames.ACCEPT), ending,
                context.refusalLinger());
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
                recordStall(ctx, Reason.IDLE_TIMEOUT, BuiltinRules.IDLE_TIMEOUT, "request head incomplete: no byte for "
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
            // then close; but a request body that is still expected can never arrive.
            endOfInput(ctx);
            return;
        }
        if (evt instanceof SslCloseCompletionEvent closure && closure.isSuccess() && state != State.TUNNEL) {
            // The client's close_notify inside an intercepted tunnel: its side of the stream has ended,
            // as with a FIN (RFC 8446 section 6.1).
            endOfInput(ctx);
        }
        ctx.fireUserEventTriggered(evt);
    }

    /**
     * The client's input ended: at once when nothing waits in the queue, else (or while a request is
     * held for approval) after what was read before it ({@link #INPUT_ENDED}), so that a pipelined or
     * held request cut by the FIN is handled as one whose body can never complete once its turn comes.
     */
    private void endOfInput(ChannelHandlerContext ctx) {
        // HELD: the request waits for its approval; its body (if any) can end only after it goes on.
        if ((!queued.isEmpty() || state == State.HELD) && state != State.CLOSED) {
            queued.add(INPUT_ENDED);
            return;
        }
        inputEnded(ctx);
    }

    private void inputEnded(ChannelHandlerContext ctx) {
        if (state == State.TUNNEL) {
            // A CONNECT that waited in the queue became a tunnel: its phase learns of the FIN.
            ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            return;
        }
        inputShut = true;
        if (state == State.FORWARDING) {
            clientClosedMidBody(ctx);
        } else {
            closeIfDrained(ctx);
        }
    }

    /**
     * The client's input ended while the request body was still expected (issue 23): the exchange ends
     * at once. The forwarder closes the upstream connection and writes the record
     * ({@code error: client_closed_mid_body}); this connection closes once what is already written is
     * flushed, which frees its slot.
     */
    private void clientClosedMidBody(ChannelHandlerContext ctx) {
        inputShut = true;
        boolean answered = responseDoneEarly;
        responseDoneEarly = false;
        state = State.CLOSED;
        releaseQueued();
        if (!answered) {
            ctx.fireChannelRead(new ExchangeControl.ClientClosedMidBody());
        }
        ctx.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }

    /**
     * The request body's chunked framing broke (RFC 9112 section 7.1): nothing more of it can be read.
     * The exchange is aborted (400 {@code malformed_request} when no answer started) and the connection
     * closes when the client is done.
     */
    private void malformedBody(ChannelHandlerContext ctx, String detail) {
        boolean answered = responseDoneEarly;
        responseDoneEarly = false;
        state = State.DISCARDING;
        closeAfterDiscard = true;
        if (answered) {
            state = State.CLOSED;
            Lingering.close(ctx);
            return;
        }
        ctx.fireChannelRead(new ExchangeControl.Abort(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_FRAMING),
                detail));
        closeIfDrained(ctx);
    }

    private void onHeaderTimeout(ChannelHandlerContext ctx) {
        if (state != State.IDLE) {
            return;
        }
        Policy policy = context.policies().current();
        recordStall(ctx, Reason.HEADER_TIMEOUT, BuiltinRules.HEADER_TIMEOUT,
                "no complete request head within " + policy.limits().headerTimeout().toMillis() + " ms");
        state = State.CLOSED;
        ctx.close();
    }

    /** Writes the record of a connection closed while it waited for a request head. */
    private void recordStall(ChannelHandlerContext ctx, Reason reason, String rule, String error) {
        AuditEvent audit = new AuditEvent(context.audit(), context.clock())
                .listener(listener)
                .client((InetSocketAddress) ctx.channel().remoteAddress())
                .decision(Decision.deny(reason, rule))
                .error(error);
        if (admission.boundExtension() != null) {
            audit.extension(admission.boundExtension());
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
                } else if (msg == INPUT_ENDED) {
                    ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
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
