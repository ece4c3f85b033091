package dev.sluice.proxy.audit;

/**
 * Receives finished audit records. {@link AuditLog} is the production sink; tests may collect
 * records in memory.
 */
@FunctionalInterface
public interface AuditSink {

    /**
     * Accepts one record without blocking the caller for I/O.
     *
     * @throws IllegalStateException if the sink no longer accepts records (for example, it was closed)
     */
    void write(AuditRecord record);
}
