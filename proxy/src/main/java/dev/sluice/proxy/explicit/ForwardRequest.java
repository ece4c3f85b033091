package dev.sluice.proxy.explicit;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.metrics.TrafficMeter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import io.netty.handler.codec.http.HttpRequest;

/**
 * An allowed plain-HTTP request, passed from the request phase to the forwarding phase. Its body, if
 * any, follows as {@code HttpContent} messages up to a {@code LastHttpContent}.
 *
 * @param request the request as it goes upstream: origin-form request-target, Host rebuilt from the
 *                absolute-form, hop-by-hop fields removed
 * @param target the parsed absolute-form
 * @param decision the name decision (allow or would_deny)
 * @param policy the snapshot that decided; the dial uses the same one
 * @param audit this exchange's audit record, emitted once by the forwarder
 * @param downstreamKeepAlive whether the client wants the connection kept after this exchange
 * @param traffic the byte counters of this exchange's extension and destination
 */
public record ForwardRequest(HttpRequest request, HttpTarget target, Decision decision, Policy policy,
                             AuditEvent audit, boolean downstreamKeepAlive, TrafficMeter traffic) {
}
