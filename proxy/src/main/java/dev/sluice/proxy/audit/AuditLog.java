package dev.sluice.proxy.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit log file: JSON Lines (one {@link AuditRecord} per line, UTF-8, {@code \n}-terminated),
 * appended by one daemon writer thread named {@value #WRITER_THREAD_NAME}.
 *
 * <p>{@link #write(AuditRecord)} only enqueues (an unbounded queue: a record is never dropped), so it
 * never blocks an event loop for I/O. The writer drains the queue in batches of up to
 * {@value #MAX_BATCH} records and writes each batch straight to the file, so {@code tail -f} sees
 * lines promptly; there is no fsync per batch, only on {@link #close()}.
 *
 * <p>When a write fails, the writer keeps the unwritten rest of the batch and retries it with
 * exponential backoff (from {@value #INITIAL_BACKOFF_MILLIS} ms up to {@value #MAX_BACKOFF_MILLIS}
 * ms), counts each failed attempt in {@link #writeFailures()}, and logs at most once a second.
 * While it cannot write, {@link #healthy()} is false; the proxy refuses new requests then (it fails
 * closed). After a successful retry it is true again.
 *
 * <p>The caller must {@link #close()} the log on shutdown: the writer is a daemon thread, and records
 * still queued when the JVM exits without close are lost.
 */
public final class AuditLog implements AuditSink, Closeable {

    /** The name of the writer thread. */
    public static final String WRITER_THREAD_NAME = "sluice-audit-writer";

    static final int MAX_BATCH = 1024;
    static final long INITIAL_BACKOFF_MILLIS = 50;
    static final long MAX_BACKOFF_MILLIS = 2000;
    /** After close() is requested, how long a failing writer keeps retrying before it gives up. */
    static final Duration DEFAULT_CLOSE_RETRY_LIMIT = Duration.ofSeconds(10);

    private static final Logger logger = LoggerFactory.getLogger(AuditLog.class);
    private static final Object CLOSE = new Object();
    private static final long LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** The file operations the writer needs; a seam for tests that make writes fail. */
    interface Output extends Closeable {
        int write(ByteBuffer src) throws IOException;

        void force() throws IOException;
    }

    private final Path path;
    private final Output output;
    private final long closeRetryLimitNanos;
    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger writersInFlight = new AtomicInteger();
    private final AtomicLong recordsWritten = new AtomicLong();
    private final AtomicLong writeFailures = new AtomicLong();
    private final AtomicLong queuedRecords = new AtomicLong();
    private final Thread writer;
    private final JsonFactory json = JsonFactory.builder().build();
    private volatile boolean healthy = true;
    private long lastFailureLogNanos;
    private long failuresSinceLog;

    private AuditLog(Path path, Output output, Duration closeRetryLimit) {
        this.path = path;
        this.output = output;
        this.closeRetryLimitNanos = closeRetryLimit.toNanos();
        this.writer = new Thread(this::runWriterGuarded, WRITER_THREAD_NAME);
        this.writer.setDaemon(true);
    }

    /**
     * Opens {@code file} for appending (creating it and its parent directories) and starts the writer
     * thread.
     *
     * @throws IOException if the file cannot be opened for appending, for example when the path is a
     *     directory or the directory is not writable
     */
    public static AuditLog open(Path file) throws IOException {
        Objects.requireNonNull(file, "file");
        Path absolute = file.toAbsolutePath();
        if (Files.isDirectory(absolute)) {
            throw new IOException("audit log path is a directory: " + absolute + " (expected: a file)");
        }
        Path parent = absolute.getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        FileChannel channel;
        try {
            channel = FileOutput.openAppend(absolute);
        } catch (IOException e) {
            throw new IOException("cannot open audit log for appending: " + absolute + " (" + e + ")", e);
        }
        return open(absolute, new FileOutput(absolute, channel), DEFAULT_CLOSE_RETRY_LIMIT);
    }

    static AuditLog open(Path path, Output output, Duration closeRetryLimit) {
        AuditLog log = new AuditLog(path, output, closeRetryLimit);
        log.writer.start();
        return log;
    }

    /** Returns the absolute path of the log file. */
    public Path path() {
        return path;
    }

    /**
     * Enqueues a record for the writer; never blocks for I/O and never drops a record.
     *
     * @throws IllegalStateException if the log was closed
     */
    @Override
    public void write(AuditRecord record) {
        Objects.requireNonNull(record, "record");
        writersInFlight.incrementAndGet();
        try {
            if (closed.get()) {
                throw new IllegalStateException("audit log is closed: " + path);
            }
            queuedRecords.incrementAndGet();
            queue.add(record);
        } finally {
            writersInFlight.decrementAndGet();
        }
    }

    /** Returns how many records have been written to the file. */
    public long recordsWritten() {
        return recordsWritten.get();
    }

    /** Returns how many write attempts have failed since the log was opened. */
    public long writeFailures() {
        return writeFailures.get();
    }

    /** Returns how many records are queued and not yet written (approximate, for metrics). */
    public long queued() {
        return queuedRecords.get();
    }

    /** Answers false while the writer cannot write (since the last failed attempt, until one succeeds). */
    public boolean healthy() {
        return healthy;
    }

    /**
     * Stops accepting records, writes every record already queued, fsyncs and closes the file, and
     * waits for the writer thread to finish. Idempotent. If the file keeps failing, the writer gives
     * up after 10 s and logs how many records were not written.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            joinWriter();
            return;
        }
        // Every write() that saw closed == false finishes its add() before the marker goes in.
        while (writersInFlight.get() != 0) {
            Thread.onSpinWait();
        }
        queue.add(CLOSE);
        joinWriter();
    }

    private void joinWriter() {
        if (Thread.currentThread() == writer) {
            return;
        }
        boolean interrupted = false;
        while (writer.isAlive()) {
            try {
                writer.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void runWriterGuarded() {
        try {
            runWriter();
        } catch (RuntimeException | Error e) {
            // A bug, or the JVM failing: the log can no longer write, so the proxy must fail closed.
            healthy = false;
            logger.error("Audit log {} writer stopped unexpectedly; {} records not written: {}", path,
                    queued(), e.toString());
            closeOutput();
        }
    }

    private void runWriter() {
        List<Object> batch = new ArrayList<>(MAX_BATCH);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 * 1024);
        boolean closing = false;
        long closeDeadline = 0;
        while (true) {
            batch.clear();
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                continue; // only close() ends the writer
            }
            queue.drainTo(batch, MAX_BATCH - 1);
            bytes.reset();
            int records = 0;
            for (Object item : batch) {
                if (item == CLOSE) {
                    closing = true;
                    closeDeadline = System.nanoTime() + closeRetryLimitNanos;
                } else {
                    serialise((AuditRecord) item, bytes);
                    records++;
                }
            }
            if (records > 0) {
                ByteBuffer pending = ByteBuffer.wrap(bytes.toByteArray());
                if (!writeFully(pending, closing, closeDeadline)) {
                    giveUp(pending);
                    return;
                }
                recordsWritten.addAndGet(records);
                queuedRecords.addAndGet(-records);
            }
            if (closing && queue.isEmpty()) {
                finish();
                return;
            }
        }
    }

    private void serialise(AuditRecord record, ByteArrayOutputStream out) {
        try (JsonGenerator g = json.createGenerator(out)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            record.writeJson(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        out.write('\n');
    }

    /** Writes all of {@code pending}, retrying with backoff; false only if closing and out of time. */
    private boolean writeFully(ByteBuffer pending, boolean closing, long closeDeadline) {
        long backoffMillis = INITIAL_BACKOFF_MILLIS;
        while (pending.hasRemaining()) {
            try {
                output.write(pending);
                continue;
            } catch (IOException | RuntimeException e) {
                healthy = false;
                writeFailures.incrementAndGet();
                logFailure(e);
            }
            boolean closeRequested = closing || closed.get();
            if (closeRequested) {
                if (closeDeadline == 0) {
                    closeDeadline = System.nanoTime() + closeRetryLimitNanos;
                }
                if (System.nanoTime() - closeDeadline >= 0) {
                    return false;
                }
            }
            sleepMillis(backoffMillis);
            backoffMillis = Math.min(MAX_BACKOFF_MILLIS, backoffMillis * 2);
        }
        if (!healthy) {
            logger.info("Audit log {} is writable again after {} failed attempts in total", path,
                    writeFailures.get());
            healthy = true;
        }
        return true;
    }

    private void logFailure(Exception e) {
        failuresSinceLog++;
        long now = System.nanoTime();
        if (lastFailureLogNanos == 0 || now - lastFailureLogNanos >= LOG_INTERVAL_NANOS) {
            logger.error("Audit log {} write failed ({} failed attempts since the last message, {} records "
                    + "queued); retrying: {}", path, failuresSinceLog, queued(), e.toString());
            lastFailureLogNanos = now;
            failuresSinceLog = 0;
        }
    }

    private void giveUp(ByteBuffer pending) {
        long lost = queued();
        logger.error("Audit log {} closed while still failing; {} records were not written "
                + "({} bytes of the last batch unwritten)", path, lost, pending.remaining());
        healthy = false;
        queue.clear();
        queuedRecords.set(0);
        closeOutput();
    }

    private void finish() {
        try {
            output.force();
        } catch (IOException e) {
            writeFailures.incrementAndGet();
            healthy = false;
            logger.error("Audit log {} fsync on close failed: {}", path, e.toString());
        }
        closeOutput();
    }

    private void closeOutput() {
        try {
            output.close();
        } catch (IOException e) {
            logger.error("Audit log {} close failed: {}", path, e.toString());
        }
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            // only close() ends the writer; keep retrying
        }
    }

    /** Appends to a file; reopens it if the channel was closed under it (e.g. by an interrupt). */
    private static final class FileOutput implements Output {
        private final Path path;
        private FileChannel channel;

        FileOutput(Path path, FileChannel channel) {
            this.path = path;
            this.channel = channel;
        }

        static FileChannel openAppend(Path path) throws IOException {
            return FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND);
        }

        @Override
        public int write(ByteBuffer src) throws IOException {
            if (!channel.isOpen()) {
                channel = openAppend(path);
            }
            return channel.write(src);
        }

        @Override
        public void force() throws IOException {
            channel.force(true);
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
