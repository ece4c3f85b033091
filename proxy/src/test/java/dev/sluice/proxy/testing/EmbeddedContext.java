package dev.sluice.proxy.testing;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.metrics.MeteredAuditSink;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;

/**
 * A {@link ProxyContext} for handlers driven through an EmbeddedChannel (fuzz targets, unit tests of a
 * handler's own answers): the real policy loader, audit log (in a temp file) and metrics, and no
 * dialer and no interception material, so a pipeline under test must never dial.
 */
public final class EmbeddedContext {


    private EmbeddedContext() {
    }

    /** Returns a context whose policy is {@code yaml}; its audit log lives in a new temp dir. */
    public static ProxyContext create(String yaml) {
        return create(yaml, Clock.systemUTC());
    }

    /**
     * Returns a context whose policy is {@code yaml} and whose audit timestamps and budget windows read
     * {@code clock} (a {@link ManualClock} to move a window on without waiting).
     */
    public static ProxyContext create(String yaml, Clock clock) {
        try {
            Policy policy = PolicyLoader.parse(yaml, "embedded.yaml");
            Path dir = Files.createTempDirectory("sluice-embedded-");
            dir.toFile().deleteOnExit();
            AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"));
            SluiceMetrics metrics = new SluiceMetrics();
            return new ProxyContext(new PolicyHolder(policy, clock), log, new MeteredAuditSink(metrics, log), null,
                    clock, metrics, new ConnectionLimits(metrics), null, new EgressBudgets(clock));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (dev.sluice.rules.policy.PolicyException e) {
            throw new IllegalArgumentException(e.errors().toString(), e);
        }
    }
}
