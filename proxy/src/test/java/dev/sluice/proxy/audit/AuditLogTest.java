package dev.sluice.proxy.audit;

import dev.sluice.rules.decision.Decision;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuditLogTest {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    @TempDir
    Path dir;

    private static AuditRecord build(int i) {
        List<AuditRecord> out = new ArrayList<>(1);
        new AuditEvent(out::add, Clock.systemUTC())
                .extension("ext-" + (i % 8))
                .listener(Listener.EXPLICIT)
                .method("GET")
                .server("origin.test", 443)
                .urlPath("/item/" + i + "?n=" + i)
                .decision(Decision.allow("extensions.ext.allow[0]"))
                .addBytesSent(i)
                .emit();
        return out.get(0);
    }

    @Test
    void tenThousandRecordsFromEightThreadsGiveTenThousandValidLines() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        AuditLog log = AuditLog.open(file);
        int threads = 8;
        int perThread = 1250;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int base = t * perThread;
            Thread w = new Thread(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    log.write(build(base + i));
                }
            });
            w.start();
            workers.add(w);
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        log.close();

        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        assertThat(lines).hasSize(10_000);
        assertThat(log.recordsWritten()).isEqualTo(10_000);
        assertThat(log.writeFailures()).isZero();
        assertThat(log.queued()).isZero();
        Set<String> ids = new HashSet<>();
        Set<Long> sent = new HashSet<>();
        for (String line : lines) {
            JsonNode json = MAPPER.readTree(line);
            List<String> keys = new ArrayList<>();
            json.fieldNames().forEachRemaining(keys::add);
            assertThat(keys).containsExactly("time", "event.id", "extension", "listener", "http.request.method",
                    "server.address", "server.port", "url.path", "decision", "reason", "rule", "bytes.sent", "bytes.received",
                    "duration_ms", "prev_hash");
            assertThat(AuditFields.LINE).containsAll(keys);
            assertThat(json.get("url.path").asText()).endsWith("?n=***");
            ids.add(json.get("event.id").asText());
            sent.add(json.get("bytes.sent").asLong());
        }
        assertThat(ids).hasSize(10_000);
        assertThat(sent).hasSize(10_000);
    }

    @Test
    void closeWritesEverythingStillQueued() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        AuditLog log = AuditLog.open(file);
        for (int i = 0; i < 20_000; i++) {
            log.write(build(i));
        }
        log.close();
        assertThat(Files.readAllLines(file)).hasSize(20_000);
        assertThat(log.recordsWritten()).isEqualTo(20_000);
    }

    @Test
    void linesAppearBeforeClose() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            log.write(build(1));
            await().atMost(Duration.ofSeconds(5)).until(() -> Files.readAllLines(file).size() == 1);
            assertThat(log.recordsWritten()).isEqualTo(1);
        }
    }

    @Test
    void writeAfterCloseThrowsAndCloseIsIdempotent() throws Exception {
        AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"));
        log.close();
        log.close();
        assertThatThrownBy(() -> log.write(build(1)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void appendsToAnExistingFileAndCreatesParentDirectories() throws Exception {
        Path file = dir.resolve("a/b/audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            log.write(build(1));
        }
        try (AuditLog log = AuditLog.open(file)) {
            assertThat(log.path()).isEqualTo(file.toAbsolutePath());
            log.write(build(2));
        }
        assertThat(Files.readAllLines(file)).hasSize(2);
    }

    /** Audit records name clients, hosts and paths: the log, its rotations and a new parent are private. */
    @Test
    void theLogItsRotationsAndANewParentAreOwnerOnly() throws Exception {
        Path file = dir.resolve("new-dir/audit.jsonl");
        try (AuditLog log = AuditLog.open(file, 600, 3)) {
            for (int i = 0; i < 20; i++) {
                log.write(build(i));
            }
        }
        assertThat(java.nio.file.Files.getPosixFilePermissions(file.getParent()))
                .isEqualTo(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        List<Path> files;
        try (var listing = Files.list(file.getParent())) {
            files = listing.toList();
        }
        assertThat(files).hasSizeGreaterThan(1);
        for (Path f : files) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(f))).as(f.toString())
                    .isEqualTo("rw-------");
        }
    }

    @Test
    void anExistingWorldReadableLogIsMadeOwnerOnly() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        Files.writeString(file, "");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        try (AuditLog log = AuditLog.open(file)) {
            log.write(build(1));
        }
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    }

    @Test
    void startsOneDaemonWriterThread() throws Exception {
        try (AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"))) {
            assertThat(log.healthy()).isTrue();
            List<Thread> writers = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals(AuditLog.WRITER_THREAD_NAME) && t.isAlive())
                    .toList();
            assertThat(writers).hasSize(1);
            assertThat(writers.get(0).isDaemon()).isTrue();
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().equals(AuditLog.WRITER_THREAD_NAME) && t.isAlive()));
    }

    @Test
    void openingADirectoryFailsWithAClearMessage() {
        assertThatThrownBy(() -> AuditLog.open(dir))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("audit log path is a directory")
                .hasMessageContaining(dir.toString());
    }

    @Test
    void openingUnderAFileFails() throws Exception {
        Path notADir = Files.createFile(dir.resolve("plain"));
        assertThatThrownBy(() -> AuditLog.open(notADir.resolve("audit.jsonl"))).isInstanceOf(IOException.class);
    }

    @Test
    void keepsAndRetriesTheBatchWhileWritesFailThenRecovers() throws Exception {
        FlakyOutput out = new FlakyOutput();
        out.failing.set(true);
        AuditLog log = AuditLog.open(dir.resolve("unused.jsonl"), out, Duration.ofSeconds(10));
        for (int i = 0; i < 100; i++) {
            log.write(build(i));
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> log.writeFailures() >= 3);
        assertThat(log.healthy()).isFalse();
        assertThat(log.recordsWritten()).isZero();

        out.failing.set(false);
        await().atMost(Duration.ofSeconds(10)).until(log::healthy);
        for (int i = 100; i < 200; i++) {
            log.write(build(i));
        }
        log.close();

        assertThat(log.recordsWritten()).isEqualTo(200);
        assertThat(out.forced).isTrue();
        assertThat(out.closed).isTrue();
        String[] lines = out.text().split("\n");
        assertThat(lines).hasSize(200);
        for (String line : lines) {
            MAPPER.readTree(line);
        }
    }

    @Test
    void aPartialWriteIsContinuedNotRepeated() throws Exception {
        FlakyOutput out = new FlakyOutput();
        out.partialThenFail.set(3);
        AuditLog log = AuditLog.open(dir.resolve("unused.jsonl"), out, Duration.ofSeconds(10));
        for (int i = 0; i < 50; i++) {
            log.write(build(i));
        }
        log.close();
        String[] lines = out.text().split("\n");
        assertThat(lines).hasSize(50);
        for (String line : lines) {
            assertThat(MAPPER.readTree(line).get("event.id").asText()).hasSize(16);
        }
        assertThat(log.writeFailures()).isEqualTo(3);
        assertThat(log.healthy()).isTrue();
    }

    @Test
    void closeGivesUpOnAnOutputThatNeverRecovers() {
        FlakyOutput out = new FlakyOutput();
        out.failing.set(true);
        AuditLog log = AuditLog.open(dir.resolve("unused.jsonl"), out, Duration.ofMillis(300));
        log.write(build(1));
        // The guard only catches a close that never returns; the outcome is what is asserted.
        assertTimeoutPreemptively(Duration.ofSeconds(30), log::close);
        assertThat(log.healthy()).isFalse();
        assertThat(log.recordsWritten()).isZero();
        assertThat(log.writeFailures()).isPositive();
        assertThat(out.closed).isTrue();
    }

    @Test
    void aWriterThatDiesLeavesTheLogUnhealthyAndCloseStillReturns() {
        AuditOutput broken = new AuditOutput() {
            @Override
            public int write(ByteBuffer src) {
                throw new AssertionError("simulated writer bug");
            }

            @Override
            public void force() {
            }

            @Override
            public void close() {
            }
        };
        AuditLog log = AuditLog.open(dir.resolve("unused.jsonl"), broken, Duration.ofSeconds(10));
        log.write(build(1));
        await().atMost(Duration.ofSeconds(5)).until(() -> !log.healthy());
        log.close();
        assertThat(log.recordsWritten()).isZero();
    }

    /** An output that fails on demand, and can write a few bytes before failing. */
    private static final class FlakyOutput implements AuditOutput {
        final AtomicBoolean failing = new AtomicBoolean();
        final AtomicInteger partialThenFail = new AtomicInteger();
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        volatile boolean forced;
        volatile boolean closed;
        private boolean wrotePartial;

        @Override
        public synchronized int write(ByteBuffer src) throws IOException {
            if (failing.get()) {
                throw new IOException("No space left on device");
            }
            if (partialThenFail.get() > 0) {
                if (!wrotePartial) {
                    int n = Math.min(7, src.remaining());
                    byte[] part = new byte[n];
                    src.get(part);
                    bytes.write(part);
                    wrotePartial = true;
                    return n;
                }
                wrotePartial = false;
                partialThenFail.decrementAndGet();
                throw new IOException("Input/output error");
            }
            int n = src.remaining();
            byte[] all = new byte[n];
            src.get(all);
            bytes.write(all);
            return n;
        }

        @Override
        public void force() {
            forced = true;
        }

        @Override
        public void close() {
            closed = true;
        }

        synchronized String text() {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }
}
