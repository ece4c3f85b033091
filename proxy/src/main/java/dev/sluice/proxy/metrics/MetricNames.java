package dev.sluice.proxy.metrics;

/**
 * Every metric Sluice exports, in one place (design.md "Metrics"). Micrometer names use dots; the
 * Prometheus registry renders them with underscores and unit suffixes, shown on the right.
 */
public final class MetricNames {

    /** {@code sluice_egress_bytes_total{extension,destination}}: bytes sent toward the internet, counted as they flow. */
    public static final String EGRESS_BYTES = "sluice.egress.bytes";
    /** {@code sluice_ingress_bytes_total{extension,destination}}: bytes received back from the internet. */
    public static final String INGRESS_BYTES = "sluice.ingress.bytes";
    /** {@code sluice_requests_total{extension,decision,reason}}: one per audit record. */
    public static final String REQUESTS = "sluice.requests";
    /** {@code sluice_redactions_total{extension,detector}}. */
    public static final String REDACTIONS = "sluice.redactions";
    /** {@code sluice_credential_injections_total{extension,credential}}: requests a credential was injected into. */
    public static final String CREDENTIAL_INJECTIONS = "sluice.credential.injections";
    /** {@code sluice_pin_failures_total{host}}. */
    public static final String PIN_FAILURES = "sluice.pin.failures";
    /**
     * {@code sluice_tls_leaf_cache_total{result}}: look-ups of an intercepted host's leaf certificate (and
     * its server TLS context), one per intercepted tunnel's handshake; result is {@code hit} or {@code miss}
     * (a miss issues a leaf).
     */
    public static final String TLS_LEAF_CACHE = "sluice.tls.leaf.cache";
    /**
     * {@code sluice_tls_downstream_handshakes_total{result}}: intercepted tunnels' client-facing TLS
     * handshakes that succeeded; result is {@code resumed} (an abbreviated handshake on a session ticket or
     * id), {@code full}, or {@code unknown} (the JDK TLS provider, which does not tell).
     */
    public static final String TLS_DOWNSTREAM_HANDSHAKES = "sluice.tls.downstream.handshakes";
    /** {@code sluice_active_connections{extension,listener}}: downstream connections bound to an extension. */
    public static final String ACTIVE_CONNECTIONS = "sluice.active.connections";
    /** {@code sluice_request_duration_seconds}: duration of each audited exchange or tunnel. */
    public static final String REQUEST_DURATION = "sluice.request.duration";
    /** {@code sluice_policy_reloads_total{result}}: result is ok or error. */
    public static final String POLICY_RELOADS = "sluice.policy.reloads";
    /** {@code sluice_audit_write_failures_total}. */
    public static final String AUDIT_WRITE_FAILURES = "sluice.audit.write.failures";
    /** Records that did not reach standard output or the OTLP collector, by {@code reason} (the file has them). */
    public static final String AUDIT_EXPORT_FAILURES = "sluice.audit.export.failures";
    /** Records delivered by the audit export, by {@code sink} ({@code otlp}, {@code stdout}). */
    public static final String AUDIT_EXPORTED = "sluice.audit.exported";
    /**
     * {@code sluice_llm_tokens_total{extension,host,kind}}: LLM tokens the providers' responses reported,
     * {@code kind} {@code input} or {@code output}; {@code host} is the inspected host.
     */
    public static final String LLM_TOKENS = "sluice.llm.tokens";
    /** {@code sluice_red_flags_total{extension,rule}}: red-flag matches, one per rule and body at most. */
    public static final String RED_FLAGS = "sluice.red.flags";
    /** {@code sluice_alert_webhook_failures_total}: alert batches the webhook did not accept after every retry. */
    public static final String ALERT_WEBHOOK_FAILURES = "sluice.alert.webhook.failures";
    /** {@code sluice_alerts_dropped_total}: alerts dropped because the webhook queue was full. */
    public static final String ALERTS_DROPPED = "sluice.alerts.dropped";
    /** {@code sluice_alerts_sent_total}: alerts a webhook accepted. */
    public static final String ALERTS_SENT = "sluice.alerts.sent";
    /**
     * {@code sluice_captures_total{result}}: captured exchanges (policy {@code capture}), {@code result}
     * {@code written}, {@code failed} (the write failed) or {@code dropped} (the writer was behind).
     */
    public static final String CAPTURES = "sluice.captures";

    /** Tag keys. */
    public static final String EXTENSION = "extension";
    public static final String DESTINATION = "destination";
    public static final String DECISION = "decision";
    public static final String REASON = "reason";
    public static final String LISTENER = "listener";
    public static final String RESULT = "result";
    public static final String DETECTOR = "detector";
    public static final String HOST = "host";
    public static final String SINK = "sink";
    public static final String CREDENTIAL = "credential";
    public static final String KIND = "kind";
    public static final String RULE = "rule";

    /** The destination label of traffic that no allow rule names (denied, or passed in report mode). */
    public static final String DENIED_DESTINATION = "denied";
    /** The extension label when no extension was identified ({@link dev.sluice.rules.policy.Extension#UNIDENTIFIED}). */
    public static final String UNKNOWN_EXTENSION = dev.sluice.rules.policy.Extension.UNIDENTIFIED;

    private MetricNames() {
    }
}
