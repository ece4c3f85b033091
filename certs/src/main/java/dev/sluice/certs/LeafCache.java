package dev.sluice.certs;

import com.github.benmanes.caffeine.cache.AsyncCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.sluice.hosts.CanonicalHost;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Leaves by host, issued once and reused: a bounded Caffeine cache in front of a {@link LeafIssuer}.
 * Concurrent requests for the same host share one issuance; a failed issuance is not cached. An entry
 * expires {@code expireAfterWrite} after issuance, which must be shorter than the leaf validity, so a
 * cached leaf always has at least {@code validity - expireAfterWrite} left.
 *
 * <p>Thread-safe; meant to be called from an event loop, which it never blocks.
 */
public final class LeafCache {

    /** Default bound on the number of cached leaves. */
    public static final long DEFAULT_MAXIMUM_SIZE = 10_000;
    /** Default time a leaf stays cached: one day (with the default seven-day validity). */
    public static final Duration DEFAULT_EXPIRE_AFTER_WRITE = Duration.ofDays(1);

    private final LeafIssuer issuer;
    private final AsyncCache<String, IssuedLeaf> cache;

    /** Creates a cache with {@link #DEFAULT_MAXIMUM_SIZE} and {@link #DEFAULT_EXPIRE_AFTER_WRITE}. */
    public LeafCache(LeafIssuer issuer) {
        this(issuer, DEFAULT_MAXIMUM_SIZE, DEFAULT_EXPIRE_AFTER_WRITE);
    }

    /**
     * Creates a cache.
     *
     * @param maximumSize the most leaves kept (&gt; 0); beyond it the least useful are evicted
     * @param expireAfterWrite how long a leaf is reused (&gt; 0 and shorter than the issuer's validity)
     * @throws IllegalArgumentException for out-of-range values
     */
    public LeafCache(LeafIssuer issuer, long maximumSize, Duration expireAfterWrite) {
        this.issuer = Objects.requireNonNull(issuer, "issuer");
        Objects.requireNonNull(expireAfterWrite, "expireAfterWrite");
        if (maximumSize <= 0) {
            throw new IllegalArgumentException("maximumSize: " + maximumSize + " (expected: > 0)");
        }
        if (expireAfterWrite.isNegative() || expireAfterWrite.isZero()
                || expireAfterWrite.compareTo(issuer.validity()) >= 0) {
            throw new IllegalArgumentException("expireAfterWrite: " + expireAfterWrite
                    + " (expected: > 0 and < the leaf validity " + issuer.validity() + ")");
        }
        this.cache = Caffeine.newBuilder()
                .maximumSize(maximumSize)
                .expireAfterWrite(expireAfterWrite)
                .buildAsync();
    }

    /**
     * Returns the leaf for {@code host}: completed at once when cached, otherwise issued by a task on
     * {@code executor} (never on the calling thread unless {@code executor} runs tasks inline).
     *
     * @param host canonical host, as {@link LeafIssuer#issue(String)} takes it
     * @param executor where issuance runs, e.g. a small blocking-task pool; not an event loop
     * @return a future completed with the leaf, or exceptionally when issuance fails
     * @throws IllegalArgumentException at once if {@code host} is not canonical
     */
    public CompletableFuture<IssuedLeaf> leafFor(String host, Executor executor) {
        CanonicalHost.of(host);
        Objects.requireNonNull(executor, "executor");
        return cache.get(host, (h, cacheExecutor) -> CompletableFuture.supplyAsync(
                () -> new IssuedLeaf(issuer.leafKey(), issuer.issue(h)), executor));
    }

    /** Returns the approximate number of cached leaves (for metrics). */
    public long estimatedSize() {
        return cache.synchronous().estimatedSize();
    }

    /** Drops every cached leaf (e.g. after the CA was replaced). */
    public void invalidateAll() {
        cache.synchronous().invalidateAll();
    }
}
