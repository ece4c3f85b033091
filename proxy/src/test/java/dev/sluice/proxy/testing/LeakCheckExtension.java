package dev.sluice.proxy.testing;

import static org.awaitility.Awaitility.await;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when Netty reported a leak while it ran (registered for every test class of the
 * proxy module through junit-platform.properties and the Extension service file). After the class,
 * objects that are no longer reachable are collected and the leak detector is made to poll its queue
 * (it does so when it tracks a new allocation; under {@code paranoid} every allocation is tracked), so
 * a leak of the class's own making is reported there rather than somewhere later.
 */
public final class LeakCheckExtension implements BeforeAllCallback, AfterAllCallback {

    /** The longest wait for a collection to enqueue the sentinel; a class fails when none does. */
    static final Duration SENTINEL_TIMEOUT = Duration.ofSeconds(10);

    @Override
    public void beforeAll(ExtensionContext context) {
        // Reports that belong to an earlier class have already failed that class (or the suite start).
        LeakReports.drain();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        for (int round = 0; round < 3; round++) {
            collect();
            for (int i = 0; i < 16; i++) {
                ByteBuf direct = PooledByteBufAllocator.DEFAULT.directBuffer(16);
                direct.release();
                ByteBuf heap = UnpooledByteBufAllocator.DEFAULT.heapBuffer(16);
                heap.release();
            }
        }
        List<String> reports = LeakReports.drain();
        if (!reports.isEmpty()) {
            throw new AssertionError("Netty reported " + reports.size() + " leak(s) (level "
                    + ResourceLeakDetector.getLevel() + ") during " + context.getDisplayName() + ":\n"
                    + String.join("\n----\n", reports));
        }
    }

    /**
     * Runs collections until the reference handler has enqueued what they found: a sentinel that became
     * unreachable before the first collection shows up in its queue. Polls with {@code System.gc()} for at
     * most {@link #SENTINEL_TIMEOUT}; when the sentinel never arrives, no collection can be shown to have
     * run, so a leak could go unreported, and the class fails.
     */
    static void collect() {
        ReferenceQueue<Object> queue = new ReferenceQueue<>();
        WeakReference<Object> sentinel = new WeakReference<>(new Object(), queue);
        try {
            await("a weakly reachable sentinel collected and enqueued").atMost(SENTINEL_TIMEOUT)
                    .pollInSameThread().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
                    .until(() -> {
                        System.gc();
                        return queue.poll() != null;
                    });
        } catch (ConditionTimeoutException e) {
            throw new AssertionError("LeakCheckExtension: no garbage collection enqueued a weakly reachable "
                    + "sentinel within " + SENTINEL_TIMEOUT.toSeconds() + " s of System.gc() calls (is "
                    + "-XX:+DisableExplicitGC set?), so Netty's leak detector could not be made to report "
                    + "this class's leaks", e);
        } finally {
            // The reference object itself must stay reachable, or it is never enqueued.
            Reference.reachabilityFence(sentinel);
        }
    }
}
