package dev.sluice.proxy.request;

import dev.sluice.proxy.approval.Approvals;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.policy.ApprovalSettings;
import dev.sluice.rules.target.Target;
import io.netty.channel.ChannelHandlerContext;
import org.jspecify.annotations.Nullable;

/**
 * The approval part of a request held after a rule miss ({@code approvals} configured): asks the
 * {@link Approvals} backend, and, on the connection's event loop, writes the answer into the request's
 * record ({@code approval}, and {@code error} when the question failed) and hands the request back to
 * its phase through a {@link Resumption}: granted, with {@code Decision.allow(BuiltinRules.approval(scope))}
 * as the record's decision; denied (or timed out), to be refused with the miss's reason; or abandoned,
 * when the client went away (or the phase closed the connection) while it waited, in which case the
 * record, unless already written, says so ({@code error: client closed while held for approval}).
 *
 * <p>The phase keeps its own state machine: it pauses reading and queues what arrives before asking,
 * and goes on with the request and its queue when resumed. One instance per held request, created
 * only when a request is held.
 */
final class ApprovalHold {

    /** How a held request goes back to its phase; called on the connection's event loop. */
    interface Resumption {

        /** Answers whether the phase still holds the request (it may have closed the connection meanwhile). */
        boolean held();

        /**
         * The request may go: {@code granted} is already the record's decision.
         *
         * @param granted the approval's decision ({@link BuiltinRules#approval})
         */
        void granted(Decision granted);

        /** The request is refused with the miss's reason (denied, or no answer in time). */
        void denied();

        /**
         * The request is gone: the phase closes and drops what it queued. Called before the record of the
         * abandoned hold is written.
         */
        void abandoned();
    }

    /** The record's {@code error} of a request whose client went away while it was held. */
    static final String CLIENT_CLOSED = "client closed while held for approval";

    private final ChannelHandlerContext ctx;
    private final AuditEvent audit;
    private final Decision miss;
    private final Resumption resumption;

    private ApprovalHold(ChannelHandlerContext ctx, AuditEvent audit, Decision miss, Resumption resumption) {
        this.ctx = ctx;
        this.audit = audit;
        this.miss = miss;
        this.resumption = resumption;
    }

    /**
     * Asks whether a held request may go; the answer comes back on {@code ctx}'s event loop.
     *
     * @param ctx the request phase's context (its event loop and channel)
     * @param approvals the backend
     * @param settings the policy's {@code approvals} section
     * @param extension the extension that asks
     * @param target the canonical target
     * @param info the request's method and path, or null for a tunnel
     * @param audit the request's record (its event id names the question)
     * @param miss the rule miss that held the request
     * @param resumption how the request goes back to its phase
     */
    static void ask(ChannelHandlerContext ctx, Approvals approvals, ApprovalSettings settings, String extension,
                    Target target, @Nullable RequestInfo info, AuditEvent audit, Decision miss, Resumption resumption) {
        ApprovalHold hold = new ApprovalHold(ctx, audit, miss, resumption);
        approvals.ask(settings, extension, target, info, audit.eventId())
                .thenAccept(outcome -> ctx.executor().execute(() -> hold.answered(outcome)));
    }

    /** Takes the backend's answer, on the event loop. */
    private void answered(Approvals.Outcome outcome) {
        audit.approval(outcome.result(), outcome.by(), outcome.scope());
        if (outcome.error() != null) {
            audit.error(outcome.error());
        }
        if (!resumption.held() || !ctx.channel().isActive()) {
            resumption.abandoned();
            if (!audit.isEmitted()) {
                audit.decision(miss).error(CLIENT_CLOSED);
                audit.emit();
            }
            return;
        }
        if (outcome.granted()) {
            Decision granted = Decision.allow(BuiltinRules.approval(outcome.scope()));
            audit.decision(granted);
            resumption.granted(granted);
        } else {
            resumption.denied();
        }
    }
}
