package dev.sluice.proxy.core;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.limits.EgressBudgets;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditSink;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.tls.InterceptionTls;
import dev.sluice.proxy.metrics.SluiceMetrics;
import java.time.Clock;
import java.time.Duration;

/**
 * What every handler of one Sluice instance shares. One per running server; never static.
 *
 * @param policies the running policy
 * @param auditLog the audit writer (its health decides whether traffic may pass)
 * @param audit where audit events are emitted: metrics, then the audit log
 * @param dialer resolves, checks and connects upstream
 * @param clock wall clock for audit timestamps
 * @param metrics the metrics registry
 * @param connections per-extension connection counts and caps
 * @param interception the TLS material for inspected hosts; null where interception is not available (a
 *     tunnel the rules mark {@code INTERCEPT} is then refused, never relayed blind)
 * @param budgets per-extension egress byte budgets
 * @param approvals asks the {@code approvals} backend about requests that miss the allowlist; null in
 *                  contexts without a policy file (tests)
 * @param credentials the credential vault for injection; null without one
 * @param captures where captured exchanges are written (policy {@code capture}); null where nothing is
 *                 captured (tests)
 * @param refusalLinger after a refusal sent while the request body still arrives, the longest time the
 *                      body is read and dropped before the connection closes (lingering close, {@code
 *                      http.Lingering}); {@link #DEFAULT_REFUSAL_LINGER} unless the server is started with another
 */
public record ProxyContext(PolicyHolder policies, AuditLog auditLog, AuditSink audit, UpstreamDialer dialer,
                           Clock clock, SluiceMetrics metrics, ConnectionLimits connections,
                           @Nullable InterceptionTls interception, EgressBudgets budgets,
                           dev.sluice.proxy.approval.@Nullable Approvals approvals,
                           dev.sluice.proxy.credential.@Nullable Credentials credentials,
                           dev.sluice.proxy.capture.@Nullable CaptureStore captures,
                           Duration refusalLinger) {

    /** The refusal linger of a server started without another: 2 s. */
    public static final Duration DEFAULT_REFUSAL_LINGER = Duration.ofSeconds(2);

    /** Checks that {@code refusalLinger} is positive. */
    public ProxyContext {
        if (refusalLinger.isNegative() || refusalLinger.isZero()) {
            throw new IllegalArgumentException("refusalLinger must be positive: " + refusalLinger);
        }
    }

    /** A context with the {@link #DEFAULT_REFUSAL_LINGER}. */
    public ProxyContext(PolicyHolder policies, AuditLog auditLog, AuditSink audit, UpstreamDialer dialer, Clock clock,
                        SluiceMetrics metrics, ConnectionLimits connections, @Nullable InterceptionTls interception,
                        EgressBudgets budgets, dev.sluice.proxy.approval.@Nullable Approvals approvals,
                        dev.sluice.proxy.credential.@Nullable Credentials credentials,
                        dev.sluice.proxy.capture.@Nullable CaptureStore captures) {
        this(policies, auditLog, audit, dialer, clock, metrics, connections, interception, budgets, approvals,
                credentials, captures, DEFAULT_REFUSAL_LINGER);
    }

    /** A context without a capture store. */
    public ProxyContext(PolicyHolder policies, AuditLog auditLog, AuditSink audit, UpstreamDialer dialer, Clock clock,
                        SluiceMetrics metrics, ConnectionLimits connections, @Nullable InterceptionTls interception,
                        EgressBudgets budgets, dev.sluice.proxy.approval.@Nullable Approvals approvals,
                        dev.sluice.proxy.credential.@Nullable Credentials credentials) {
        this(policies, auditLog, audit, dialer, clock, metrics, connections, interception, budgets, approvals,
                credentials, null);
    }

    /** A context without credential injection (placeholders are then not looked for). */
    public ProxyContext(PolicyHolder policies, AuditLog auditLog, AuditSink audit, UpstreamDialer dialer, Clock clock,
                        SluiceMetrics metrics, ConnectionLimits connections, @Nullable InterceptionTls interception,
                        EgressBudgets budgets, dev.sluice.proxy.approval.@Nullable Approvals approvals) {
        this(policies, auditLog, audit, dialer, clock, metrics, connections, interception, budgets, approvals, null);
    }

    /** A context without approvals. */
    public ProxyContext(PolicyHolder policies, AuditLog auditLog, AuditSink audit, UpstreamDialer dialer, Clock clock,
                        SluiceMetrics metrics, ConnectionLimits connections, @Nullable InterceptionTls interception,
                        EgressBudgets budgets) {
        this(policies, auditLog, audit, dialer, clock, metrics, connections, interception, budgets, null);
    }

    /**
     * Returns the byte counters for traffic of {@code extension} decided by {@code decision}, charging
     * the extension's egress budget.
     */
    public dev.sluice.proxy.metrics.TrafficMeter traffic(dev.sluice.rules.policy.Policy policy,
                                                         dev.sluice.rules.policy.Extension extension,
                                                         dev.sluice.rules.decision.Decision decision) {
        return metrics.traffic(policy, extension, decision).withBudget(budgets.account(extension.name(),
                policy.limits().egressBudgetWindow()));
    }
}
