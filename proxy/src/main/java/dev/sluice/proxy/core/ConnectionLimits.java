package dev.sluice.proxy.core;

import dev.sluice.proxy.metrics.SluiceMetrics;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts downstream connections per extension, enforcing {@code limits.max_connections_per_extension}
 * (answered 503 {@code connection_limit}) and feeding the {@code sluice_active_connections} gauge. A
 * connection is bound to an extension by its first identified request; one extension at its cap never
 * affects another.
 */
public final class ConnectionLimits {

    private final SluiceMetrics metrics;
    private final Map<String, AtomicInteger> perExtension = new ConcurrentHashMap<>();

    public ConnectionLimits(SluiceMetrics metrics) {
        this.metrics = metrics;
    }

    /**
     * Binds one more connection to {@code extension} unless it already has {@code max}.
     *
     * @return true when bound (call {@link #release} when the connection closes), false at the cap
     */
    public boolean tryAcquire(String extension, String listener, int max) {
        AtomicInteger count = perExtension.computeIfAbsent(extension, e -> new AtomicInteger());
        while (true) {
            int now = count.get();
            if (now >= max) {
                return false;
            }
            if (count.compareAndSet(now, now + 1)) {
                metrics.activeConnections(extension, listener).incrementAndGet();
                return true;
            }
        }
    }

    /** Unbinds a connection bound by {@link #tryAcquire}. */
    public void release(String extension, String listener) {
        AtomicInteger count = perExtension.get(extension);
        if (count != null) {
            count.decrementAndGet();
        }
        metrics.activeConnections(extension, listener).decrementAndGet();
    }

    /** Returns the connections bound to {@code extension} now. */
    public int active(String extension) {
        AtomicInteger count = perExtension.get(extension);
        return count == null ? 0 : count.get();
    }
}
