package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.core.Draining;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ExchangeSequencer;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.proxy.http.Lingering;
import dev.sluice.proxy.http.Refusals;
import dev.sluice.proxy.http.StrictRequestDecoder;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.PrematureChannelClosureException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslCloseCompletionEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.Optional;

/**
 * The request phase of the explicit listener (design.md steps 1–4): for each HTTP/1.x request it
 * identifies the extension, canonicalises the request-target and asks {@link Decider} for a decision.
 * It answers refusals itself and hands allowed requests on, as a {@link ForwardRequest} (absolute-form,
 * plain HTTP) or a {@link ConnectRequest} (authority-form CONNECT). It never dials, and never decides
 * by itself.
 *
 * <p>Answers it sends itself, each with an audit record: the refusals listed in the package
 * documentation ({@code package-info}), from its parts.
 * A refused request with a body (including one sent with {@code Expect: 100-continue}) is answered
 * at once, without waiting for its body, with {@code Connection: close}; what arrives of the body is
 * dropped and the connection closes when the body ends or after {@link ProxyContext#refusalLinger}.
 * The same phase serves other listeners and intercepted tunnels through a {@link RequestFront}.
 *
 * <p>Requests on one connection are handled one at a time: while an allowed exchange is in flight, or a
 * request is held for approval ({@link ApprovalHold}), pipelined requests wait in a {@link RequestQueue}
 * (reading is paused), so answers keep the order of requests.
 *
 * <p>It reads as identify → canonicalise → decide → hand off, each step a part of its own:
 * {@link HeadScreen} (decoder failures, single identity and Host, audit health), the {@link RequestFront}
 * and {@link RequestAdmission} (identity, connection cap, budget), {@link Placement} (the canonical
 * target), {@link DecidedRequest#decide} (the rules' decision), {@link ApprovalHold} (a miss the
 * approvals may overturn), {@link Handoff} (the tunnel or forward request, upgrades); {@link Refusal}
 * says how a refused connection ends and {@link RequestRecords} fills records. This class keeps the
 * connection's state: which request is in flight, what waits, and how the connection ends.
 *
 * <p>Half-close: a FIN (or, in an intercepted tunnel, a TLS close_notify) after a complete request lets
 * its answer finish, then the connection closes. One while the request body is still expected ends the
 * exchange at once ({@link ExchangeControl.ClientClosedMidBody}: upstream closed, record with
 * {@code error: client_closed_mid_body}, nothing more to the client, connection closed, slot freed).
 * A body chunk the decoder rejects is never passed on; a broken chunked body (RFC 9112 section 7.1)
 * aborts the exchange with 400 {@code malformed_request} when no answer has started.
 */
public final class ExplicitRequestHandler extends ChannelInboundHandlerAdapter implements ExchangeSequencer {

    private enum State { IDLE, HELD, FORWARDING, AWAITING_RESPONSE, DISCARDING, TUNNEL, CLOSED }

    private final ProxyContext context;
    private final RequestFront front;
    private final Listener listener;
    private final RequestQueue queued = new RequestQueue();
    private final RequestAdmission admission;
    private final RequestRecords records;
    private final Resumption resumption = new Resumption();
    private State state = State.IDLE;
    private boolean responseDoneEarly;
    private boolean closeAfterDiscard;
    private boolean inputShut;
    private boolean draining;

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
        this.records = new RequestRecords(context, listener);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (state == State.AWAITING_RESPONSE || state == State.HELD || (!queued.isEmpty() && state != State.TUNNEL)) {
            if (!queued.offer(msg)) {
                state = State.CLOSED;
                ctx.close();
                return;
            }
            Reads.setAutoRead(ctx.channel(), false);
            return;
        }
        process(ctx, msg);
    }

    private void process(ChannelHandlerContext ctx, Object msg) {
        if (RequestQueue.isInputEnded(msg)) {
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
            case FORWARDING -> forwardBody(ctx, msg);
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

    /** Passes on a part of the body of the request in flight; a part the decoder rejected never goes on. */
    private void forwardBody(ChannelHandlerContext ctx, Object msg) {
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
        replay(ctx);
        closeIfDrained(ctx);
    }

    /**
     * Takes up what waited, in order, until a request is in flight or held again or the connection
     * closes; reading resumes unless one is.
     */
    private void replay(ChannelHandlerContext ctx) {
        while (!queued.isEmpty() && state != State.AWAITING_RESPONSE && state != State.CLOSED
                && state != State.HELD) {
            process(ctx, queued.poll());
        }
        if (state == State.CLOSED) {
            queued.releaseAll();
        }
        if (state != State.AWAITING_RESPONSE && state != State.CLOSED && state != State.HELD) {
            Reads.setAutoRead(ctx.channel(), true);
        }
    }

    /** Identifies, canonicalises and decides one request head, then refuses, holds or hands it on. */
    private void onRequest(ChannelHandlerContext ctx, HttpRequest request) {
        HeaderDeadline deadline = ctx.pipeline().get(HeaderDeadline.class);
        if (deadline != null) {
            deadline.headReceived();
        }
        Policy policy = context.policies().current();
        AuditEvent audit = records.open(ctx.channel());
        Refusal refusal = HeadScreen.screen(request, audit, policy, front, admission);
        if (refusal != null) {
            refuse(ctx, request, audit, refusal);
            return;
        }

        // Identify.
        front.describe(audit);
        Optional<Extension> identified = front.identify(policy, request);
        if (identified.isEmpty()) {
            RequestRecords.describeTarget(request, audit);
            refuse(ctx, request, audit, new Refusal(Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.AUTH), null,
                    false));
            return;
        }
        Extension extension = identified.get();
        audit.extension(extension.name());
        refusal = admission.admit(ctx.channel(), extension, policy, front.bindsConnection());
        if (refusal != null) {
            RequestRecords.describeTarget(request, audit);
            refuse(ctx, request, audit, refusal);
            return;
        }

        // Canonicalise.
        audit.scheme(front.scheme(request));
        Placement placement = Placement.of(front, request);
        if (placement.refusal() != null) {
            refuse(ctx, request, audit, placement.refusal());
            return;
        }
        // Decide: a CONNECT's decision also says what the tunnel becomes (blind or intercepted).
        DecidedRequest decided = DecidedRequest.decide(request, audit, policy, extension, placement,
                !front.readsInsideTls());
        Decision decision = decided.decision();
        if (!decision.permits()) {
            if (policy.approvals() != null && context.approvals() != null
                    && Decider.approvable(decision, decided.target())) {
                hold(ctx, decided);
                return;
            }
            refuse(ctx, request, audit, new Refusal(decision, null, decided.connect()));
            return;
        }
        proceed(ctx, decided);
    }

    /**
     * Holds a request that missed the allowlist while the {@code approvals} backend is asked
     * ({@link ApprovalHold}): reading stops and whatever arrives is queued; the answer comes back on this
     * channel's event loop ({@link Resumption}), where the request is handed on (granted) or refused with
     * the miss's reason (denied, timeout), then the queue is replayed. The connection keeps its slot under
     * {@code limits.max_connections_per_extension} while held.
     */
    private void hold(ChannelHandlerContext ctx, DecidedRequest decided) {
        state = State.HELD;
        ApprovalHold.ask(ctx, java.util.Objects.requireNonNull(context.approvals(), "approvals"), decided, resumption);
    }

    /** How a held request comes back to this phase (one at a time: only one request is ever held). */
    private final class Resumption implements ApprovalHold.Resumption {

        @Override
        public boolean held() {
            return state == State.HELD;
        }

        @Override
        public void granted(ChannelHandlerContext ctx, DecidedRequest granted) {
            state = State.IDLE;
            proceed(ctx, granted);
            replay(ctx);
        }

        @Override
        public void denied(ChannelHandlerContext ctx, DecidedRequest held) {
            state = State.IDLE;
            refuse(ctx, held.request(), held.audit(), new Refusal(held.decision(), null, held.connect()));
            replay(ctx);
        }

        @Override
        public void abandoned() {
            state = State.CLOSED;
            queued.releaseAll();
        }
    }

    /** Goes on with a request the policy (or an approval) allows: a tunnel, or a request to forward. */
    private void proceed(ChannelHandlerContext ctx, DecidedRequest decided) {
        if (decided.connect()) {
            state = State.TUNNEL;
            Handoff.tunnel(ctx, context, decided, listener);
            return;
        }
        Refusal upgrade = Handoff.upgradeRefusal(decided.request(), front, decided.policy());
        if (upgrade != null) {
            refuse(ctx, decided.request(), decided.audit(), upgrade);
            return;
        }
        state = State.FORWARDING;
        Handoff.forward(ctx, context, decided, front, Handoff.websocketMode(decided.request(), front, decided.policy()));
    }

    /**
     * Answers {@code refusal} ({@link Refusals}) and goes on as {@link Refusal#ending} says: closed; or
     * reading and dropping the body, then closing (lingering close, at most {@link ProxyContext#refusalLinger})
     * or waiting for the next request.
     */
    private void refuse(ChannelHandlerContext ctx, HttpRequest request, AuditEvent audit, Refusal refusal) {
        Refusals.Ending ending = refusal.ending(request);
        state = ending == Refusals.Ending.CLOSE ? State.CLOSED : State.DISCARDING;
        closeAfterDiscard = ending != Refusals.Ending.KEEP_OPEN;
        Refusals.refuse(ctx, audit, refusal.decision(), refusal.detail(), request.headers().get(HttpHeaderNames.ACCEPT),
                ending, context.refusalLinger());
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
                records.headStalled(ctx.channel(), context.policies().current().limits().idleTimeout(),
                        admission.boundExtension());
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
     * held for approval) after what was read before it ({@link RequestQueue#addInputEnded}), so that a pipelined or
     * held request cut by the FIN is handled as one whose body can never complete once its turn comes.
     */
    private void endOfInput(ChannelHandlerContext ctx) {
        // HELD: the request waits for its approval; its body (if any) can end only after it goes on.
        if ((!queued.isEmpty() || state == State.HELD) && state != State.CLOSED) {
            queued.addInputEnded();
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
        queued.releaseAll();
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
        records.headTimedOut(ctx.channel(), context.policies().current().limits().headerTimeout(),
                admission.boundExtension());
        state = State.CLOSED;
        ctx.close();
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
        queued.releaseAll();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (state == State.TUNNEL) {
            // Hand anything still queued to the next phase, in order.
            queued.handToTunnel(ctx);
        }
        queued.releaseAll();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // Never a stack trace on the wire: close. The exchange's own audit record notes the error.
        ctx.fireExceptionCaught(cause);
    }
}
