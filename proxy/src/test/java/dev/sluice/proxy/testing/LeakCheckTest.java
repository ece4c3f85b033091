package dev.sluice.proxy.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.ResourceLeakDetector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The suite's leak check sees a real leak: a pooled buffer dropped without release is reported. */
class LeakCheckTest {

    @Test
    void aBufferDroppedWithoutReleaseIsReported() {
        assertThat(ResourceLeakDetector.getLevel()).isEqualTo(ResourceLeakDetector.Level.PARANOID);
        leakOne();
        List<String> seen = new ArrayList<>();
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            System.gc();
            // Tracking a new allocation makes the detector poll its queue of collected, unreleased buffers.
            PooledByteBufAllocator.DEFAULT.directBuffer(16).release();
            seen.addAll(LeakReports.drain());
            return !seen.isEmpty();
        });
        assertThat(seen).anyMatch(r -> r.contains("LEAK") && r.contains("leakOne"));
    }

    private static void leakOne() {
        ByteBuf leaked = PooledByteBufAllocator.DEFAULT.directBuffer(64);
        leaked.writeLong(42);
        leaked.readLong(); // an access, recorded by the paranoid detector
    }
}
