package dev.sluice.proxy.server;

import dev.sluice.proxy.core.PolicyHolder;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyError;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hot reload of the policy file, failing closed: a file that loads replaces the running snapshot
 * atomically (connections already decided keep their decision); a file that does not load never
 * replaces it — the old policy keeps running, every error is logged with file:line:column, and the
 * failure is counted.
 *
 * <p>Triggers: {@link #reload()} (called on SIGHUP), and a watcher thread that notices changes to the
 * file (an inotify watch on its directory, plus a check of the file's SHA-256 every
 * {@value #POLL_MILLIS} ms, which also catches symlink swaps). A change is acted on once the file
 * has been quiet for {@value #SETTLE_MILLIS} ms. The same broken content is reported once, not on
 * every check. A change of the {@code listen} or {@code audit} section is logged as needing a restart;
 * the listeners keep their addresses and the audit log its file and rotation settings.
 */
public final class PolicyReloader implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PolicyReloader.class);

    /** How often the watcher re-reads the file's hash when nothing was signalled, in milliseconds. */
    static final long POLL_MILLIS = 2_000;
    /** How long a changed file must stay unchanged before it is loaded, in milliseconds. */
    static final long SETTLE_MILLIS = 200;

    /** Outcome of one reload attempt. */
    public enum Result {
        /** The file loaded and now runs. */
        OK,
        /** The file did not load; the previous policy keeps running. */
        ERROR,
        /** The file is byte-for-byte the running policy: nothing to do. */
        UNCHANGED
    }

    private final Path file;
    private final PolicyHolder holder;
    private final AtomicLong ok = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private volatile String lastFailedSha;
    private volatile List<PolicyError> lastErrors = List.of();
    private Thread watcher;
    private WatchService watchService;
    private volatile boolean closed;

    /**
     * @param file the policy file the running snapshot came from
     * @param holder where the running snapshot lives
     */
    public PolicyReloader(Path file, PolicyHolder holder) {
        this(file, holder, next -> { });
    }

    /**
     * A reloader that hands every policy that loads to {@code prepare} before swapping it in; a
     * {@link PolicyException} from it fails the reload like a bad file (credentials that cannot be read).
     */
    public PolicyReloader(Path file, PolicyHolder holder, Prepare prepare) {
        this.file = Objects.requireNonNull(file, "file").toAbsolutePath();
        this.holder = Objects.requireNonNull(holder, "holder");
        this.prepare = Objects.requireNonNull(prepare, "prepare");
    }

    /** What readies a loaded policy before it runs. */
    @FunctionalInterface
    public interface Prepare {
        /** Readies {@code next}; throws when it cannot run. */
        void prepare(Policy next) throws PolicyException;
    }

    private final Prepare prepare;

    /**
     * Loads the file now and swaps it in if it loads. Thread-safe: attempts are serialised.
     *
     * @return what happened; never throws for a bad file
     */
    public synchronized Result reload() {
        Policy running = holder.current();
        String sha;
        try {
            sha = PolicyLoader.fingerprint(file, running.includes());
        } catch (IOException e) {
            if (!Files.isReadable(file)) {
                return fail(null, List.of(new PolicyError(file.toString(), 0, 0, "cannot read: " + e.getMessage())));
            }
            sha = null; // a fragment is gone or unreadable: the load below names it with file:line
        }
        if (sha != null && sha.equals(running.sha256Hex())) {
            return Result.UNCHANGED;
        }
        Policy next;
        try {
            next = PolicyLoader.load(file);
            prepare.prepare(next);
        } catch (PolicyException e) {
            return fail(sha == null ? MISSING_FRAGMENT : sha, e.errors());
        }
        if (!Objects.equals(next.listen(), running.listen())) {
            log.warn("policy reload: the listen section changed; restart needed for it to take effect "
                    + "(listeners keep their addresses)");
        }
        if (!Objects.equals(next.audit(), running.audit())) {
            log.warn("policy reload: the audit section changed; restart needed for it to take effect "
                    + "(the audit log keeps its file and rotation settings)");
        }
        holder.swap(next);
        watchDirectories(next);
        lastFailedSha = null;
        lastErrors = List.of();
        ok.incrementAndGet();
        log.info("policy reloaded: {} sha256={} ({} extensions)", next.source(), next.sha256Hex(),
                next.extensions().size());
        return Result.OK;
    }

    private Result fail(String sha, List<PolicyError> found) {
        errors.incrementAndGet();
        lastErrors = List.copyOf(found);
        if (sha == null || !sha.equals(lastFailedSha)) {
            log.error("POLICY RELOAD FAILED: {} did not load; the running policy (sha256={}) stays in force. "
                    + "{} error(s):", file, holder.current().sha256Hex(), found.size());
            for (PolicyError error : found) {
                log.error("  {}", error);
            }
        }
        lastFailedSha = sha;
        return Result.ERROR;
    }

    /** Returns how many reloads succeeded. */
    public long reloadsOk() {
        return ok.get();
    }

    /** Returns how many reload attempts failed (each keeps the old policy). */
    public long reloadErrors() {
        return errors.get();
    }

    /** Returns the errors of the last failed attempt, empty after a success. */
    public List<PolicyError> lastErrors() {
        return lastErrors;
    }

    /** Starts the watcher thread (daemon, named {@code sluice-policy-watch}). */
    public synchronized void startWatching() throws IOException {
        if (watcher != null) {
            return;
        }
        watchService = file.getFileSystem().newWatchService();
        file.getParent().register(watchService, StandardWatchEventKinds.ENTRY_CREATE,
                StandardWatchEventKinds.ENTRY_MODIFY, StandardWatchEventKinds.ENTRY_DELETE);
        watchDirectories(holder.current());
        watcher = new Thread(this::watch, "sluice-policy-watch");
        watcher.setDaemon(true);
        watcher.start();
    }

    private void watch() {
        while (!closed) {
            try {
                WatchKey key = watchService.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
                if (key != null) {
                    // Let a burst of events (write, rename, chmod) settle, then look once.
                    Thread.sleep(SETTLE_MILLIS);
                    key.pollEvents();
                    key.reset();
                    WatchKey more;
                    while ((more = watchService.poll()) != null) {
                        more.pollEvents();
                        more.reset();
                    }
                }
                if (!closed && changed()) {
                    reload();
                }
            } catch (InterruptedException | ClosedWatchServiceException e) {
                return;
            } catch (RuntimeException e) {
                log.error("policy watcher: {}", e.toString());
            }
        }
    }

    /**
     * Answers whether the policy file or one of the running policy's fragments changed. A fragment that
     * went missing counts as a change once (the reload then fails and names it); the policy file missing
     * for a moment (an editor's rename) does not.
     */
    private boolean changed() {
        Policy running = holder.current();
        try {
            String sha = PolicyLoader.fingerprint(file, running.includes());
            return !sha.equals(running.sha256Hex()) && !sha.equals(lastFailedSha);
        } catch (IOException e) {
            if (!Files.exists(file) || running.includes().isEmpty()) {
                return false;
            }
            return !MISSING_FRAGMENT.equals(lastFailedSha);
        }
    }

    /** lastFailedSha after a failed load while a fragment could not be read. */
    private static final String MISSING_FRAGMENT = "missing-fragment";

    /** Watches the directory of every fragment too (the policy file's is watched from the start). */
    private synchronized void watchDirectories(Policy policy) {
        if (watchService == null) {
            return;
        }
        for (Path fragment : policy.includes()) {
            Path dir = fragment.getParent();
            try {
                if (dir != null && !dir.equals(file.getParent())) {
                    dir.register(watchService, StandardWatchEventKinds.ENTRY_CREATE,
                            StandardWatchEventKinds.ENTRY_MODIFY, StandardWatchEventKinds.ENTRY_DELETE);
                }
            } catch (IOException | RuntimeException e) {
                log.warn("policy watcher: cannot watch {} ({}); changes there are noticed within {} ms", dir,
                        e.toString(), POLL_MILLIS);
            }
        }
    }

    /** Stops the watcher. */
    @Override
    public synchronized void close() {
        closed = true;
        if (watcher != null) {
            watcher.interrupt();
            try {
                watchService.close();
            } catch (IOException e) {
                log.debug("closing the watch service: {}", e.toString());
            }
        }
    }
}
