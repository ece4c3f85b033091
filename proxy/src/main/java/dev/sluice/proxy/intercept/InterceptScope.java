package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.target.Target;

/**
 * What the request phase knows about the requests inside an intercepted tunnel: every request is the
 * tunnel's extension's, to the tunnel's target, and its Host must name that target.
 *
 * @param extension the extension that opened the tunnel
 * @param target the CONNECT target (also the SNI)
 * @param listener the listener the tunnel came in on ({@code explicit} or {@code transparent})
 * @param inspected the policy's {@code inspect} entry for the target
 * @param tunnelAudit the tunnel's own audit record (handshake, SNI, errors)
 */
public record InterceptScope(String extension, Target target, String listener, InspectedHost inspected,
                             AuditEvent tunnelAudit) {
}
