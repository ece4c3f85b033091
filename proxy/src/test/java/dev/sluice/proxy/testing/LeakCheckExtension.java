package dev.sluice.proxy.testing;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.List;
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

    @Override
    public void beforeAll(ExtensionContext context) {
        // Reports that belong to an earlier class have already failed that class (or the suite start).
        LeakReports.drain();
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
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
     * Runs a collection and waits (up to 2 s) until the reference handler has enqueued what it found:
     * a sentinel that became unreachable before the collection shows up in its queue.
     */
    private static void collect() throws InterruptedException {
        ReferenceQueue<Object> queue = new ReferenceQueue<>();
        WeakReference<Object> sentinel = new WeakReference<>(new Object(), queue);
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (System.nanoTime() < deadline) {
            System.gc();
            if (queue.remove(50) != null) {
                break;
            }
        }
        sentinel.clear();
    }
}
