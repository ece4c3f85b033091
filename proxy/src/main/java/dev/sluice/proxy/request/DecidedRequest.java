package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.Target;
import io.netty.handler.codec.http.HttpRequest;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One request the request phase identified, canonicalised and decided (design.md steps 1–4): what it
 * refuses, holds for approval or hands on.
 *
 * @param request the decoded request head, as the client sent it
 * @param audit the request's record, not yet written
 * @param policy the policy it was decided under
 * @param extension the extension it comes from
 * @param target the canonical target (the CONNECT authority, or the HTTP target's host and port)
 * @param httpTarget the canonical HTTP target of a request that is no tunnel; null for a CONNECT
 * @param info the method and path the rules saw; null for a CONNECT
 * @param decision the rules' decision (for a CONNECT, it also says what the tunnel becomes)
 */
record DecidedRequest(HttpRequest request, AuditEvent audit, Policy policy, Extension extension, Target target,
                      @Nullable HttpTarget httpTarget, @Nullable RequestInfo info, Decision decision) {

    /**
     * Decides a placed request ({@link Decider#decideTunnel} for a tunnel, {@link Decider#decidePlainHttp}
     * for a request read without TLS, {@link Decider#decide} with its method and path otherwise) and writes the decision, and the target, into its record.
     *
     * @param placement where the request goes; placed, not refused
     * @param plaintext whether the request was read without TLS ({@code RequestFront.readsInsideTls} false)
     */
    static DecidedRequest decide(HttpRequest request, AuditEvent audit, Policy policy, Extension extension,
                                 Placement placement, boolean plaintext) {
        Target target = Objects.requireNonNull(placement.target(), "target");
        HttpTarget httpTarget = placement.httpTarget();
        if (httpTarget != null) {
            audit.urlPath(httpTarget.pathAndQuery());
        }
        audit.server(target.host(), target.port());
        RequestInfo info = httpTarget == null ? null : new RequestInfo(request.method().name(), httpTarget.path());
        Decision decision = info == null ? Decider.decideTunnel(policy, extension, target)
                : plaintext ? Decider.decidePlainHttp(policy, extension, target, info)
                : Decider.decide(policy, extension, target, info);
        audit.decision(decision);
        return new DecidedRequest(request, audit, policy, extension, target, httpTarget, info, decision);
    }

    /** Answers whether the request opens a tunnel (it has no HTTP target). */
    boolean connect() {
        return httpTarget == null;
    }

    /** Returns this request with {@code next} as its decision (an approval's grant). */
    DecidedRequest withDecision(Decision next) {
        return new DecidedRequest(request, audit, policy, extension, target, httpTarget, info, next);
    }
}
