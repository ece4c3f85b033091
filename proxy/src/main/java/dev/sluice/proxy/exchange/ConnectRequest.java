package dev.sluice.proxy.exchange;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.metrics.TrafficMeter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;

/**
 * An allowed CONNECT, passed from the request phase to the tunnel phase. Bytes the client sent after
 * its CONNECT header block follow as raw {@code ByteBuf}s.
 *
 * @param target the authority-form target
 * @param decision the name decision
 * @param policy the snapshot that decided
 * @param audit the tunnel's audit record, emitted once when the tunnel closes
 * @param traffic the byte counters of this tunnel's extension and destination
 * @param extension the name of the extension that asked
 * @param listener the listener it came in on ({@code explicit} or {@code transparent})
 * @param accept the CONNECT request's {@code Accept} field (RFC 9110 section 12.5.1), or null: a refusal
 *               is JSON when it prefers {@code application/json}
 */
public record ConnectRequest(Target target, Decision decision, Policy policy, AuditEvent audit,
                             TrafficMeter traffic, String extension, Listener listener, @Nullable String accept) {

    /** A tunnel request without an {@code Accept} field (transparent TLS, for one). */
    public ConnectRequest(Target target, Decision decision, Policy policy, AuditEvent audit, TrafficMeter traffic,
                          String extension, Listener listener) {
        this(target, decision, policy, audit, traffic, extension, listener, null);
    }
}
