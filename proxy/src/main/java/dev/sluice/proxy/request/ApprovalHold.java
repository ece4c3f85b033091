package dev.sluice.proxy.request;

import dev.sluice.proxy.approval.Approvals;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.Reads;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import io.netty.channel.ChannelHandlerContext;
import java.util.Objects;

/**
 * The approval part of a request held after a rule miss ({@code approvals} configured): asks the
 * {@link Approvals} backend, and, on the connection's event loop, writes the answer into the request's
 * record ({@code approval}, and {@code error} when the question failed) and hands the request back to
 * its phase through a {@link Resumption}: granted, with {@code Decision.allow(BuiltinRules.approval(scope))}
 * as the record's decision; denied (or timed out), to be refused with the miss's reason; or abandoned,
 * when the client went away (or the phase closed the connection) while it waited, in which case the
 * record, unless already written, says so ({@code error: client closed while held for approval}).
 *
 * <p>The phase keeps its own state machine: it queues what arrives while the request is held, and goes
 * on with the request and its queue when resumed. One instance per held request, created
 * only when a request is held.
 */
final class ApprovalHold {

    /**
     * How a held request goes back to its phase; called on the connection's event loop. One per phase
     * (it serves each request the phase holds, one at a time).
     */
    interface Resumption {

        /** Answers whether the phase still holds the request (it may have closed the connection meanwhile). */
        boolean held();

        /**
         * The request may go: its decision is the approval's ({@link BuiltinRules#approval}), already the
         * record's.
         *
         * @param ctx the phase's context
         * @param granted the held request with the approval's decision
         */
        void granted(ChannelHandlerContext ctx, DecidedRequest granted);

        /**
         * The request is refused with the miss's reason (denied, or no answer in time).
         *
         * @param ctx the phase's context
         * @param held the held request, with the miss as its decision
         */
        void denied(ChannelHandlerContext ctx, DecidedRequest held);

        /**
         * The request is gone: the phase closes and drops what it queued. Called before the record of the
         * abandoned hold is written.
         */
        void abandoned();
    }

    /** The record's {@code error} of a request whose client went away while it was held. */
    static final String CLIENT_CLOSED = "client closed while held for approval";

    private final ChannelHandlerContext ctx;
    private final DecidedRequest held;
    private final Resumption resumption;

    private ApprovalHold(ChannelHandlerContext ctx, DecidedRequest held, Resumption resumption) {
        this.ctx = ctx;
        this.held = held;
        this.resumption = resumption;
    }

    /**
     * Asks whether a held request may go; the answer comes back on {@code ctx}'s event loop. Reading stops
     * until then (what arrives meanwhile is the phase's to queue), and a held CONNECT's decoder is removed
     * at once: from here on its client speaks raw bytes.
     *
     * @param ctx the request phase's context (its event loop and channel)
     * @param approvals the backend
     * @param held the request, decided as a miss the approvals may overturn; its policy has an
     *     {@code approvals} section, and its record's event id names the question
     * @param resumption how the request goes back to its phase
     */
    static void ask(ChannelHandlerContext ctx, Approvals approvals, DecidedRequest held, Resumption resumption) {
        Reads.setAutoRead(ctx.channel(), false);
        if (held.connect()) {
            // From here on the client speaks raw bytes (if it speaks before the answer at all).
            ctx.pipeline().remove(HttpPipeline.DECODER);
        }
        ApprovalHold hold = new ApprovalHold(ctx, held, resumption);
        approvals.ask(Objects.requireNonNull(held.policy().approvals(), "approvals"), held.extension().name(),
                        held.target(), held.info(), held.audit().eventId())
                .thenAccept(outcome -> ctx.executor().execute(() -> hold.answered(outcome)));
    }

    /** Takes the backend's answer, on the event loop. */
    private void answered(Approvals.Outcome outcome) {
        AuditEvent audit = held.audit();
        audit.approval(outcome.result(), outcome.by(), outcome.scope());
        if (outcome.error() != null) {
            audit.error(outcome.error());
        }
        if (!resumption.held() || !ctx.channel().isActive()) {
            resumption.abandoned();
            if (!audit.isEmitted()) {
                audit.decision(held.decision()).error(CLIENT_CLOSED);
                audit.emit();
            }
            return;
        }
        if (outcome.granted()) {
            Decision granted = Decision.allow(BuiltinRules.approval(outcome.scope()));
            audit.decision(granted);
            resumption.granted(ctx, held.withDecision(granted));
        } else {
            resumption.denied(ctx, held);
        }
    }
}
