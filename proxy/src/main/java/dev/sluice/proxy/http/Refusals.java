package dev.sluice.proxy.http;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.decision.Decision;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpResponse;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Sluice's refusal of one HTTP/1.x exchange, the one way the request phase and the forwarder both
 * refuse: the answer ({@link Answers#refusal}: the reason's status, a one-line text body or, when the
 * client's {@code Accept} prefers it, a JSON body), the exchange's record (the decision, the
 * status, the detail as its {@code error} unless one is already recorded), written once, and how the
 * connection ends ({@link Ending}). What the caller's own state becomes (discarding, closed, lingering)
 * stays the caller's.
 */
public final class Refusals {

    /** How the downstream connection ends after the refusal is written. */
    public enum Ending {
        /** Kept for the next request ({@code Connection: keep-alive}); a failed write closes it. */
        KEEP_OPEN,
        /** Closed once the answer is written ({@code Connection: close}). */
        CLOSE,
        /**
         * The request body is still coming: the answer says {@code Connection: close}, the caller drops
         * the body as it arrives and closes when it ends, and the connection is closed after the
         * caller's linger bound at the latest ({@link Lingering}; closing with unread input would reset it
         * and could lose the answer).
         */
        CLOSE_AFTER_BODY
    }

    private Refusals() {
    }

    /**
     * Answers the exchange of {@code audit} with {@code decision}'s refusal and writes its record.
     *
     * @param ctx the downstream channel's context (the answer goes out through it)
     * @param audit the exchange's record, not yet written
     * @param decision a decision that does not permit; its reason must have an HTTP status
     * @param detail what the record's {@code error} says, or null
     * @param accept the request's {@code Accept} header, or null
     * @param ending how the connection ends
     * @param linger with {@link Ending#CLOSE_AFTER_BODY}, the longest time the body is read and dropped
     *     before the connection closes (the proxy's {@code ProxyContext.refusalLinger}); unused otherwise
     */
    public static void refuse(ChannelHandlerContext ctx, AuditEvent audit, Decision decision, @Nullable String detail,
                              @Nullable String accept, Ending ending, Duration linger) {
        FullHttpResponse answer = Answers.refusal(ctx.alloc(), decision.reason(), decision.reasonText(),
                ending != Ending.KEEP_OPEN, Answers.Refused.of(audit, decision.ruleId(), accept));
        audit.decision(decision).statusCode(decision.reason().httpStatus());
        if (detail != null && audit.errorOrNull() == null) {
            audit.error(detail);
        }
        audit.emit();
        switch (ending) {
            case KEEP_OPEN -> ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            case CLOSE -> ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE);
            case CLOSE_AFTER_BODY -> {
                ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
                Lingering.closeLater(ctx, linger);
            }
        }
    }
}
