package dev.sluice.proxy.capture;

import dev.sluice.proxy.audit.PrivateFiles;
import dev.sluice.rules.policy.CaptureSettings;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.jspecify.annotations.Nullable;

/**
 * The {@code captures/} directory of the data dir: one file {@code <event.id>.json} ({@link Capture#toJson()})
 * per captured exchange, the directory {@code rwx------} and every file {@code rw-------}.
 *
 * <p>{@link #submit} only enqueues; one daemon thread named {@value #WRITER_THREAD_NAME} writes, so no
 * event loop waits for a disk. The queue holds at most {@value #MAX_QUEUED_BYTES} bytes of bodies: a
 * capture that does not fit is dropped. A capture is written to a temporary file created {@code 0600}
 * and renamed into place, so a reader never sees half a capture. Traffic never waits for a capture and
 * never fails because of one: a dropped capture or a failed write is counted ({@link #dropped()},
 * {@link #failed()}: {@code sluice_captures_total{result="dropped"|"failed"}}) and logged at WARN at most
 * once a second; the audit record of that exchange still says {@code capture: true} (it was sampled), and
 * {@code sluice audit show} then says that the capture is missing.
 *
 * <p>Rotation: after {@link #retain} (at start), after each write, and every {@value #PRUNE_INTERVAL_SECONDS} s, captures older than the
 * last policy's {@code capture.retention} are deleted (by file modification time), then the oldest ones
 * until the directory holds at most {@code capture.max_total_bytes}.
 */
public final class CaptureStore implements Closeable {

    /** The writer thread's name. */
    public static final String WRITER_THREAD_NAME = "sluice-capture-writer";
    /** The directory under the data dir. */
    public static final String DIRECTORY = "captures";
    /** Most bytes of bodies waiting to be written; more is dropped. */
    static final long MAX_QUEUED_BYTES = 64L << 20;
    static final long PRUNE_INTERVAL_SECONDS = 60;

    private static final Logger log = LoggerFactory.getLogger(CaptureStore.class);
    private static final Pattern NAME = Pattern.compile("[0-9a-f]{16}\\.json");
    private static final long LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final Object CLOSE = new Object();

    private record Job(Capture capture, CaptureSettings settings, long bytes) {
    }

    private record Kept(Path file, long bytes, Instant modified) {
    }

    private final Path dir;
    private final Clock clock;
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong lastWarnNanos = new AtomicLong(System.nanoTime() - LOG_INTERVAL_NANOS);
    private final Thread writer;
    // writer-thread state
    private @Nullable TreeSet<Kept> kept;
    private final java.util.Map<Path, Kept> byFile = new java.util.HashMap<>();
    private long keptBytes;
    private @Nullable CaptureSettings settings;

    private CaptureStore(Path dataDir, Clock clock) {
        this.dir = dataDir.resolve(DIRECTORY);
        this.clock = clock;
        this.writer = new Thread(this::run, WRITER_THREAD_NAME);
        this.writer.setDaemon(true);
    }

    /** Starts the writer for {@code dataDir}/{@value #DIRECTORY} (created on the first write). */
    public static CaptureStore start(Path dataDir, Clock clock) {
        CaptureStore store = new CaptureStore(Objects.requireNonNull(dataDir, "dataDir"),
                Objects.requireNonNull(clock, "clock"));
        store.writer.start();
        return store;
    }

    /** Returns {@code dataDir}/{@value #DIRECTORY}. */
    public static Path directory(Path dataDir) {
        return dataDir.resolve(DIRECTORY);
    }

    /**
     * Queues {@code capture} to be written under {@code settings} (its retention and size cap); a
     * capture is queued once, later calls do nothing. Never blocks.
     */
    public void submit(Capture capture, CaptureSettings settings) {
        if (!capture.claim()) {
            return;
        }
        long bytes = capture.request().size() + (capture.response() == null ? 0 : capture.response().size());
        if (queuedBytes.addAndGet(bytes) > MAX_QUEUED_BYTES || !writer.isAlive()) {
            queuedBytes.addAndGet(-bytes);
            dropped.incrementAndGet();
            warn("capture {} dropped: more than {} bytes are waiting to be written", capture.eventId(),
                    MAX_QUEUED_BYTES);
            return;
        }
        queue.add(new Job(capture, settings, bytes));
    }

    /**
     * Sets the retention and size cap used until the next {@link #submit} (which brings its own): for the
     * captures left from before a start, pruned then even before anything new is captured. Null does nothing.
     */
    public void retain(CaptureSettings settings) {
        if (settings != null) {
            queue.add(settings);
        }
    }

    /** Captures written. */
    public long written() {
        return written.get();
    }

    /** Captures whose write failed. */
    public long failed() {
        return failed.get();
    }

    /** Captures dropped because the writer was behind (or stopped). */
    public long dropped() {
        return dropped.get();
    }

    /** Stops the writer after what is queued (waiting at most 5 s). */
    @Override
    public void close() {
        queue.add(CLOSE);
        try {
            writer.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        while (true) {
            Object next;
            try {
                next = queue.poll(PRUNE_INTERVAL_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (next == CLOSE) {
                return;
            }
            try {
                if (next instanceof CaptureSettings retained) {
                    settings = retained;
                    if (kept == null && Files.isDirectory(dir)) {
                        index();
                    }
                }
                if (next instanceof Job job) {
                    queuedBytes.addAndGet(-job.bytes());
                    settings = job.settings();
                    write(job.capture());
                }
                if (settings != null && kept != null) {
                    prune();
                }
            } catch (IOException | RuntimeException e) {
                log.warn("capture writer: {}", e.toString());
            }
        }
    }

    private void write(Capture capture) {
        try {
            PrivateFiles.directory(dir);
            if (kept == null) {
                index();
            }
            byte[] json = capture.toJson();
            Path tmp = dir.resolve("." + capture.eventId() + ".tmp");
            Path file = dir.resolve(capture.eventId() + ".json");
            Files.deleteIfExists(tmp);
            try (FileChannel ch = FileChannel.open(tmp, java.util.Set.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PrivateFiles.FILE))) {
                ByteBuffer buf = ByteBuffer.wrap(json);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            }
            PrivateFiles.restrict(tmp, PrivateFiles.FILE);
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            Kept previous = byFile.remove(file);
            if (previous != null) {
                kept.remove(previous);
                keptBytes -= previous.bytes();
            }
            Kept now = new Kept(file, json.length, clock.instant());
            kept.add(now);
            byFile.put(file, now);
            keptBytes += json.length;
            written.incrementAndGet();
        } catch (IOException | RuntimeException e) {
            failed.incrementAndGet();
            warn("capture {} not written: {}", capture.eventId(), e.toString());
        }
    }

    /** Reads the directory's captures (after a restart they count toward the cap and retention too). */
    private void index() throws IOException {
        kept = new TreeSet<>(Comparator.comparing(Kept::modified).thenComparing(k -> k.file().toString()));
        keptBytes = 0;
        byFile.clear();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                if (!NAME.matcher(f.getFileName().toString()).matches()) {
                    continue;
                }
                try {
                    BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
                    Kept k = new Kept(f, a.size(), a.lastModifiedTime().toInstant());
                    kept.add(k);
                    byFile.put(f, k);
                    keptBytes += a.size();
                } catch (NoSuchFileException e) {
                    // removed meanwhile
                }
            }
        }
    }

    private void prune() {
        Instant oldest = clock.instant().minus(settings.retention());
        List<Kept> remove = new ArrayList<>();
        long total = keptBytes;
        for (Kept k : kept) {
            if (k.modified().isBefore(oldest) || total > settings.maxTotalBytes()) {
                remove.add(k);
                total -= k.bytes();
            } else {
                break;
            }
        }
        for (Kept k : remove) {
            try {
                Files.deleteIfExists(k.file());
            } catch (IOException e) {
                warn("capture {} not removed: {}", k.file().getFileName(), e.toString());
                continue;
            }
            kept.remove(k);
            byFile.remove(k.file());
            keptBytes -= k.bytes();
        }
    }

    private void warn(String format, Object a, Object b) {
        long now = System.nanoTime();
        long last = lastWarnNanos.get();
        if (now - last >= LOG_INTERVAL_NANOS && lastWarnNanos.compareAndSet(last, now)) {
            log.warn(format, a, b);
        }
    }

    /** Returns {@code captures/<eventId>.json} under {@code dataDir}, or null when {@code eventId} is not an id. */
    public static @Nullable Path file(Path dataDir, @Nullable String eventId) {
        if (eventId == null || !NAME.matcher(eventId + ".json").matches()) {
            return null;
        }
        return directory(dataDir).resolve(eventId + ".json");
    }
}
