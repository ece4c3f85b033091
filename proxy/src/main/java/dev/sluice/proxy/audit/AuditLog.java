package dev.sluice.proxy.audit;

import dev.sluice.rules.policy.AuditSettings;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
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
 * <p>Hash chain: the writer ends every line with {@code "prev_hash"}, the lowercase hex SHA-256 of
 * the previous line's exact bytes ({@link AuditChain}). The first line of a new log carries 64 zeros.
 * Opening an existing file continues its chain from its last complete line; if the file ends in a
 * partial line (no {@code \n}, e.g. after a crash), the writer first ends that line with a
 * {@code \n} and never appends to it, so it stays visible to {@code sluice audit verify}, and the
 * chain continues from the last complete line. The chain is computed on the writer thread, so the
 * order of the lines is the order of the chain.
 *
 * <p>Rotation by size: when the next record would take the active file past {@code maxFileBytes},
 * the writer fsyncs and closes it, deletes rotated files numbered {@code keepFiles} and above, shifts
 * {@code file.1} … to {@code file.2} …, renames the active file to {@code file.1} (atomic renames,
 * then an fsync of the directory) and starts a new active file. A record is never split across
 * files, and the chain runs on: the new file's first line carries the hash of the old file's last
 * line. A record larger than {@code maxFileBytes} gets a file of its own. A failed rotation is
 * retried like a failed write (the log is unhealthy meanwhile).
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

    private final Path path;
    private final AuditOutput output;
    private final long closeRetryLimitNanos;
    private final long maxFileBytes;
    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger writersInFlight = new AtomicInteger();
    private final AtomicLong recordsWritten = new AtomicLong();
    private final AtomicLong writeFailures = new AtomicLong();
    private final AtomicLong queuedRecords = new AtomicLong();
    private final AtomicLong rotations = new AtomicLong();
    private final Thread writer;
    private volatile boolean healthy = true;
    private long lastFailureLogNanos;
    private long failuresSinceLog;
    private final Backoff backoff;
    // Writer-thread state (set before the writer starts, then only touched by it).
    private final ChainedLineEncoder encoder;
    private long fileBytes;
    private boolean needsNewline;

    private AuditLog(Path path, AuditOutput output, Duration closeRetryLimit, long maxFileBytes, String prevHash,
                     long fileBytes, boolean needsNewline) {
        this.path = path;
        this.output = output;
        this.closeRetryLimitNanos = closeRetryLimit.toNanos();
        this.maxFileBytes = maxFileBytes;
        this.encoder = new ChainedLineEncoder(prevHash);
        this.backoff = new Backoff(INITIAL_BACKOFF_MILLIS, MAX_BACKOFF_MILLIS, closeRetryLimit);
        this.fileBytes = fileBytes;
        this.needsNewline = needsNewline;
        this.writer = new Thread(this::runWriterGuarded, WRITER_THREAD_NAME);
        this.writer.setDaemon(true);
    }

    /**
     * Opens {@code file} with the default rotation settings ({@link AuditSettings#DEFAULT_MAX_FILE_BYTES}
     * = 64 MiB, {@link AuditSettings#DEFAULT_KEEP_FILES} = 10); see {@link #open(Path, long, int)}.
     *
     * @throws IOException if the file cannot be opened for appending, for example when the path is a
     *     directory or the directory is not writable
     */
    public static AuditLog open(Path file) throws IOException {
        return open(file, AuditSettings.DEFAULT_MAX_FILE_BYTES, AuditSettings.DEFAULT_KEEP_FILES);
    }

    /**
     * Opens {@code file} for appending (creating it and its parent directories), reads its last line
     * (or its newest rotated sibling's) to continue the hash chain, and starts the writer thread.
     *
     * @param file the active file, e.g. {@code sluice-data/audit.jsonl}
     * @param maxFileBytes rotate before the active file would grow past this many bytes; {@code > 0}
     * @param keepFiles rotated files to keep, 1..{@value AuditSettings#MAX_KEEP_FILES}
     * @throws IOException if the file cannot be read or opened for appending, for example when the path
     *     is a directory or the directory is not writable
     * @throws IllegalArgumentException if {@code maxFileBytes} or {@code keepFiles} is out of range
     */
    public static AuditLog open(Path file, long maxFileBytes, int keepFiles) throws IOException {
        Objects.requireNonNull(file, "file");
        if (maxFileBytes < 1) {
            throw new IllegalArgumentException("maxFileBytes: " + maxFileBytes + " (expected: > 0)");
        }
        if (keepFiles < 1 || keepFiles > AuditSettings.MAX_KEEP_FILES) {
            throw new IllegalArgumentException("keepFiles: " + keepFiles + " (expected: 1.."
                    + AuditSettings.MAX_KEEP_FILES + ")");
        }
        Path absolute = file.toAbsolutePath();
        if (Files.isDirectory(absolute)) {
            throw new IOException("audit log path is a directory: " + absolute + " (expected: a file)");
        }
        Path parent = absolute.getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            Files.createDirectories(parent, PosixFilePermissions.asFileAttribute(PrivateFiles.DIRECTORY));
        }
        FileChannel channel;
        AuditChain.Tail tail;
        String prevHash;
        try {
            channel = RotatingFileOutput.openAppend(absolute);
        } catch (IOException e) {
            throw new IOException("cannot open audit log for appending: " + absolute + " (" + e + ")", e);
        }
        try {
            tail = AuditChain.readTail(absolute);
            prevHash = AuditChain.continueFrom(absolute, tail);
        } catch (IOException e) {
            channel.close();
            throw new IOException("cannot read the end of the audit log to continue its hash chain: " + absolute
                    + " (" + e + ")", e);
        }
        if (tail.partial()) {
            logger.warn("Audit log {} ends in a partial line ({} bytes in the file); it is left as it is, "
                    + "and the chain continues from the last complete line", absolute, tail.size());
        }
        return open(absolute, new RotatingFileOutput(absolute, channel, keepFiles), DEFAULT_CLOSE_RETRY_LIMIT,
                maxFileBytes, prevHash, tail.size(), tail.partial());
    }

    /** Opens a log on {@code output} that never rotates and starts a new chain (for tests). */
    static AuditLog open(Path path, AuditOutput output, Duration closeRetryLimit) {
        return open(path, output, closeRetryLimit, Long.MAX_VALUE, AuditChain.GENESIS, 0, false);
    }

    static AuditLog open(Path path, AuditOutput output, Duration closeRetryLimit, long maxFileBytes, String prevHash,
                         long fileBytes, boolean needsNewline) {
        AuditLog log = new AuditLog(path, output, closeRetryLimit, maxFileBytes, prevHash, fileBytes, needsNewline);
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

    /** Returns how many times the active file was rotated since the log was opened. */
    public long rotations() {
        return rotations.get();
    }

    /** Returns how many write (or rotation) attempts have failed since the log was opened. */
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
        LineBuffer bytes = new LineBuffer(64 * 1024);
        List<Cut> cuts = new ArrayList<>();
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
            cuts.clear();
            int records = 0;
            long inFile = fileBytes;
            for (Object item : batch) {
                if (item == CLOSE) {
                    closing = true;
                    closeDeadline = System.nanoTime() + closeRetryLimitNanos;
                    continue;
                }
                if (needsNewline && bytes.size() == 0) {
                    bytes.write('\n'); // end the partial line left by a crash; never append to it
                    inFile++;
                }
                int start = bytes.size();
                encoder.encode((AuditRecord) item, bytes);
                int length = bytes.size() - start;
                if (inFile > 0 && inFile + length > maxFileBytes) {
                    cuts.add(new Cut(start, records));
                    inFile = 0;
                }
                inFile += length;
                records++;
            }
            if (records > 0) {
                int from = 0;
                long done = 0;
                for (Cut cut : cuts) {
                    if (!writeSegment(bytes, from, cut.offset(), closing, closeDeadline)) {
                        return;
                    }
                    countWritten(cut.recordsBefore() - done);
                    done = cut.recordsBefore();
                    if (!rotateWithRetry(closing, closeDeadline)) {
                        giveUp(ByteBuffer.wrap(bytes.array(), cut.offset(), bytes.size() - cut.offset()));
                        return;
                    }
                    from = cut.offset();
                }
                if (!writeSegment(bytes, from, bytes.size(), closing, closeDeadline)) {
                    return;
                }
                countWritten(records - done);
            }
            if (closing && queue.isEmpty()) {
                finish();
                return;
            }
        }
    }

    /** Writes bytes {@code [from, to)} of the batch; on giving up, logs and closes (returns false). */
    private boolean writeSegment(LineBuffer bytes, int from, int to, boolean closing, long closeDeadline) {
        ByteBuffer pending = ByteBuffer.wrap(bytes.array(), from, to - from);
        if (!writeFully(pending, closing, closeDeadline)) {
            giveUp(pending);
            return false;
        }
        fileBytes += to - from;
        needsNewline = false;
        return true;
    }

    private void countWritten(long records) {
        recordsWritten.addAndGet(records);
        queuedRecords.addAndGet(-records);
    }

    /** Rotates the active file, retrying with backoff; false only if closing and out of time. */
    private boolean rotateWithRetry(boolean closing, long closeDeadline) {
        boolean done = backoff.retry(() -> {
            output.rotate();
            return true;
        }, e -> failed("rotation", e), () -> closing || closed.get(), closeDeadline);
        if (!done) {
            return false;
        }
        fileBytes = 0;
        rotations.incrementAndGet();
        if (!healthy) {
            logger.info("Audit log {} rotated after {} failed attempts in total", path, writeFailures.get());
            healthy = true;
        }
        return true;
    }

    /** Writes all of {@code pending}, retrying with backoff; false only if closing and out of time. */
    private boolean writeFully(ByteBuffer pending, boolean closing, long closeDeadline) {
        boolean done = backoff.retry(() -> {
            output.write(pending);
            return !pending.hasRemaining();
        }, e -> failed("write", e), () -> closing || closed.get(), closeDeadline);
        if (!done) {
            return false;
        }
        if (!healthy) {
            logger.info("Audit log {} is writable again after {} failed attempts in total", path,
                    writeFailures.get());
            healthy = true;
        }
        return true;
    }

    /** One failed attempt: the log is unhealthy (the proxy refuses traffic), counted, logged at most once a second. */
    private void failed(String what, Exception e) {
        healthy = false;
        writeFailures.incrementAndGet();
        logFailure(what, e);
    }

    private void logFailure(String what, Exception e) {
        failuresSinceLog++;
        long now = System.nanoTime();
        if (lastFailureLogNanos == 0 || now - lastFailureLogNanos >= LOG_INTERVAL_NANOS) {
            logger.error("Audit log {} {} failed ({} failed attempts since the last message, {} records "
                    + "queued); retrying: {}", path, what, failuresSinceLog, queued(), e.toString());
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


    /** Where a batch crosses into a new file: the offset of that file's first line, and the records before it. */
    private record Cut(int offset, long recordsBefore) {
    }
}
