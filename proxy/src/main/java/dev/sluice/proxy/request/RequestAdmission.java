package dev.sluice.proxy.request;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import io.netty.channel.Channel;

/**
 * The checks a request passes before its target is decided, for one downstream connection: the audit
 * log can write (else 503 {@code audit_unavailable}: no traffic Sluice could not record), and, once the
 * extension is known, its connection cap ({@code limits.max_connections_per_extension}, 503
 * {@code connection_limit}; the connection is bound to the extension of its first identified request
 * and released when it closes, whichever phase owns it then) and its egress budget (429
 * {@code egress_budget}). The explicit and intercepted request phase admits each request; the transparent
 * listener's tunnel phase admits its one connection. Not thread-safe: used on the connection's event loop.
 */
public final class RequestAdmission {

    private final ProxyContext context;
    private final String listener;  // the metrics label
    private @Nullable String boundExtension;

    /**
     * @param context the proxy's shared parts (audit log, connection limits, budgets)
     * @param listener the listener the connection came in on (the label of the connection gauge)
     */
    public RequestAdmission(ProxyContext context, Listener listener) {
        this.context = context;
        this.listener = listener.label();
    }

    /** Returns the refusal while the audit log cannot write, else null. */
    public @Nullable Refusal auditHealth() {
        return context.auditLog().healthy() ? null
                : new Refusal(Decision.deny(Reason.AUDIT_UNAVAILABLE, BuiltinRules.AUDIT), "audit log unavailable", true);
    }

    /**
     * Admits a request of {@code extension}: binds the connection (when {@code bindsConnection}) and checks
     * the budget.
     *
     * @return the refusal, or null when the request may go on to its decision
     */
    public @Nullable Refusal admit(Channel channel, Extension extension, Policy policy, boolean bindsConnection) {
        if (bindsConnection && !bind(channel, extension.name(), policy.limits().maxConnectionsPerExtension())) {
            return new Refusal(Decision.deny(Reason.CONNECTION_LIMIT, BuiltinRules.MAX_CONNECTIONS), null, true);
        }
        if (context.budgets().exhausted(extension.name(), policy.limits().egressBudgetBytes(),
                policy.limits().egressBudgetWindow())) {
            return new Refusal(Decision.deny(Reason.EGRESS_BUDGET, BuiltinRules.EGRESS_BUDGET), null, false);
        }
        return null;
    }

    /** Returns the extension this connection is bound to, or null. */
    @Nullable String boundExtension() {
        return boundExtension;
    }

    /**
     * Binds the connection to {@code extension}; a connection whose requests change identity is moved to
     * the new extension. Returns false when the extension is at its cap.
     */
    private boolean bind(Channel channel, String extension, int max) {
        if (extension.equals(boundExtension)) {
            return true;
        }
        if (!context.connections().tryAcquire(extension, listener, max)) {
            return false;
        }
        if (boundExtension != null) {
            context.connections().release(boundExtension, listener);
        } else {
            // Released when the connection closes, whichever phase owns it then (a tunnel outlives the
            // request phase).
            channel.closeFuture().addListener(f -> unbind());
        }
        boundExtension = extension;
        return true;
    }

    private void unbind() {
        if (boundExtension != null) {
            context.connections().release(boundExtension, listener);
            boundExtension = null;
        }
    }
}
