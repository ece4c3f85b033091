package dev.sluice.proxy.server;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.dial.UpstreamDialer;
import java.time.Clock;

/**
 * What every handler of one Sluice instance shares: the policy snapshot holder, the audit log, the
 * upstream dialer and the clock. One per running server; never static.
 *
 * @param policies the running policy
 * @param auditLog where audit records go
 * @param dialer resolves, checks and connects upstream
 * @param clock wall clock for audit timestamps
 */
public record ProxyContext(PolicyHolder policies, AuditLog auditLog, UpstreamDialer dialer, Clock clock) {
}
