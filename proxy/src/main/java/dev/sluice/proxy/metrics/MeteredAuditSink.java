package dev.sluice.proxy.metrics;

import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.audit.AuditSink;

/**
 * Where every audit record goes: counted in the metrics ({@code sluice_requests_total}, durations,
 * redactions), then handed to the audit log. One record, one count: the metrics and the log never
 * disagree on how many requests there were.
 */
public final class MeteredAuditSink implements AuditSink {

    private final SluiceMetrics metrics;
    private final AuditSink log;

    public MeteredAuditSink(SluiceMetrics metrics, AuditSink log) {
        this.metrics = metrics;
        this.log = log;
    }

    @Override
    public void write(AuditRecord record) {
        metrics.recordRequest(record);
        log.write(record);
    }
}
