package dev.sluice.proxy.audit;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;

/** Audit logs whose disk refuses every write, for tests of what the proxy answers while it cannot record. */
public final class FailingAuditLogs {

    private FailingAuditLogs() {
    }

    /**
     * Returns an audit log that has failed a write and is no longer {@link AuditLog#healthy() healthy}
     * (its output throws on every write). Its {@code close()} gives up after 100 ms.
     *
     * @param dir where the (never written) file would be
     */
    public static AuditLog unhealthy(Path dir) {
        AuditLog log = AuditLog.open(dir.resolve("failing-audit.jsonl"), new AuditOutput() {
            @Override
            public int write(ByteBuffer src) throws IOException {
                throw new IOException("disk full (test)");
            }

            @Override
            public void force() throws IOException {
                throw new IOException("disk full (test)");
            }

            @Override
            public void close() {
            }
        }, Duration.ofMillis(100));
        new AuditEvent(log, Clock.systemUTC()).listener(Listener.EXPLICIT).error("a record the disk refuses").emit();
        await().atMost(Duration.ofSeconds(10)).until(() -> !log.healthy());
        return log;
    }
}
