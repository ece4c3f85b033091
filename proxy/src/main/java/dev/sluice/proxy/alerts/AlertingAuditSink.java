package dev.sluice.proxy.alerts;

import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.audit.AuditSink;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.rules.policy.Policy;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An audit sink that passes every record on and raises an alert ({@code alerts.webhook} of the running
 * policy) for a record with red flags of {@code alert} / {@code block} rules
 * ({@code RedFlagSettings.alerting}) or with credential findings. Never blocks: the webhook queue does.
 */
public final class AlertingAuditSink implements AuditSink {

    private final AuditSink delegate;
    private final PolicyHolder policies;
    private final AlertWebhook webhook;

    public AlertingAuditSink(AuditSink delegate, PolicyHolder policies, AlertWebhook webhook) {
        this.delegate = delegate;
        this.policies = policies;
        this.webhook = webhook;
    }

    @Override
    public void write(AuditRecord record) {
        delegate.write(record);
        Policy policy = policies.current();
        if (policy.alerts() == null) {
            return;
        }
        if (record.redFlags() != null && policy.redFlags() != null) {
            List<String> rules = policy.redFlags().alerting(record.redFlags().keySet());
            if (!rules.isEmpty()) {
                webhook.offer(new AlertWebhook.Alert(policy.alerts().webhook(), body("red_flag", rules, record)));
            }
        }
        if (record.redactions() != null && !record.redactions().isEmpty()) {
            webhook.offer(new AlertWebhook.Alert(policy.alerts().webhook(),
                    body("credential_detected", List.copyOf(record.redactions().keySet()), record)));
        }
    }

    private static Map<String, Object> body(String kind, List<String> rules, AuditRecord record) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", kind);
        m.put("rules", rules);
        m.put("event_id", record.eventId());
        m.put("time", record.time() == null ? null : record.time().toString());
        m.put("extension", record.extension());
        m.put("host", record.serverAddress());
        m.put("path", record.urlPath());
        m.put("reason", record.reason());
        return m;
    }
}
