package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.proxy.http.StrictRequestDecoder;
import dev.sluice.rules.policy.Policy;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpRequest;
import org.jspecify.annotations.Nullable;

/**
 * The first look at a request head, before identity matters: the decoder's failures and the framing and
 * version checks ({@link DecoderFailures}), one identity and one {@code Host} ({@link SingleFields}), and
 * the audit log's health ({@link RequestAdmission#auditHealth}). Fills the record with what it can say
 * of a head it refuses: the method when the head parsed, the target as far as it places, and the
 * extension when the head names exactly one.
 */
final class HeadScreen {

    private HeadScreen() {
    }

    /**
     * Returns the refusal of {@code request}, or null when it may go on to be identified.
     *
     * @param audit the request's record; gets the method (when the head parsed) whatever the answer
     */
    static @Nullable Refusal screen(HttpRequest request, AuditEvent audit, Policy policy, RequestFront front,
                                    RequestAdmission admission) {
        DecoderResult result = request.decoderResult();
        boolean headParsed = !result.isFailure()
                || result.cause() instanceof StrictRequestDecoder.AmbiguousFramingException;
        if (headParsed) {
            audit.method(request.method().name());
        }
        Refusal refusal = DecoderFailures.of(request, policy.limits().maxHeaderBytes());
        if (refusal == null) {
            // One identity or none: repeated Proxy-Authorization or Host (SingleFields).
            refusal = SingleFields.check(request.headers(), front.identifiesByProxyAuthorization());
            if (refusal != null) {
                RequestRecords.describeTarget(request, audit);
            }
        }
        if (refusal == null) {
            refusal = admission.auditHealth();
            if (refusal != null) {
                // The record waits in the writer's queue until the disk takes it again: say what was refused.
                RequestRecords.describeRefused(front, request, audit);
            }
        }
        if (refusal != null && headParsed && SingleFields.identitySingle(request.headers())) {
            // The record still names who sent it when the head was parsed whole (a framing refusal, a
            // repeated Host) and carries one identity; a repeated Proxy-Authorization names no one.
            front.identify(policy, request).ifPresent(e -> audit.extension(e.name()));
        }
        return refusal;
    }
}
