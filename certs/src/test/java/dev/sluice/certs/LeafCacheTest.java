package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LeafCacheTest {

    @TempDir
    static Path dir;

    static LocalCa ca;
    static ExecutorService pool;

    @BeforeAll
    static void setUp() throws Exception {
        ca = LocalCa.create(dir);
        pool = Executors.newFixedThreadPool(2, r -> new Thread(r, "issuer-test"));
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @Test
    void sameHostSameLeafOtherHostOtherLeaf() throws Exception {
        LeafCache cache = new LeafCache(new LeafIssuer(ca));
        IssuedLeaf a1 = cache.leafFor("a.example", pool).get(5, TimeUnit.SECONDS);
        IssuedLeaf a2 = cache.leafFor("a.example", pool).get(5, TimeUnit.SECONDS);
        IssuedLeaf b = cache.leafFor("b.example", pool).get(5, TimeUnit.SECONDS);

        assertThat(a2).isSameAs(a1);
        assertThat(a2.leaf().getSerialNumber()).isEqualTo(a1.leaf().getSerialNumber());
        assertThat(b.leaf().getSerialNumber()).isNotEqualTo(a1.leaf().getSerialNumber());
        assertThat(b.leaf().getSubjectAlternativeNames()).containsExactly(List.of(2, "b.example"));
        assertThat(a1.chain()).hasSize(2);
        assertThat(a1.chain()[1]).isEqualTo(ca.certificate());
        assertThat(a1.key()).isEqualTo(b.key());
    }

    @Test
    void issuesOnTheGivenExecutor() throws Exception {
        LeafCache cache = new LeafCache(new LeafIssuer(ca));
        AtomicInteger tasks = new AtomicInteger();
        IssuedLeaf leaf = cache.leafFor("c.example", r -> {
            tasks.incrementAndGet();
            pool.execute(r);
        }).get(5, TimeUnit.SECONDS);
        assertThat(tasks).hasValue(1);
        assertThat(leaf.leaf().getSubjectAlternativeNames()).containsExactly(List.of(2, "c.example"));

        cache.leafFor("c.example", r -> {
            throw new AssertionError("a cached leaf must not be issued again");
        }).get(5, TimeUnit.SECONDS);
    }

    @Test
    void concurrentRequestsShareOneIssuance() throws Exception {
        LeafCache cache = new LeafCache(new LeafIssuer(ca));
        AtomicInteger tasks = new AtomicInteger();
        List<CompletableFuture<IssuedLeaf>> futures = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            futures.add(cache.leafFor("d.example", r -> {
                tasks.incrementAndGet();
                pool.execute(r);
            }));
        }
        IssuedLeaf first = futures.get(0).get(5, TimeUnit.SECONDS);
        for (CompletableFuture<IssuedLeaf> f : futures) {
            assertThat(f.get(5, TimeUnit.SECONDS)).isSameAs(first);
        }
        assertThat(tasks).hasValue(1);
    }

    @Test
    void sizeIsBounded() throws Exception {
        LeafCache cache = new LeafCache(new LeafIssuer(ca), 3, Duration.ofHours(1));
        for (int i = 0; i < 20; i++) {
            cache.leafFor("h" + i + ".example", Runnable::run).get(5, TimeUnit.SECONDS);
        }
        // Caffeine evicts asynchronously: await the size settling rather than poll with sleeps.
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(cache.estimatedSize()).isLessThanOrEqualTo(3));
    }

    @Test
    void rejectsBadArguments() {
        LeafIssuer issuer = new LeafIssuer(ca);
        LeafCache cache = new LeafCache(issuer);
        assertThatThrownBy(() -> cache.leafFor("*.example", pool)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new LeafCache(issuer, 0, Duration.ofHours(1)))
                .hasMessageContaining("maximumSize");
        assertThatThrownBy(() -> new LeafCache(issuer, 10, Duration.ofDays(7)))
                .hasMessageContaining("expireAfterWrite");
    }

    @Test
    void issuedLeafCopiesItsChain() throws Exception {
        IssuedLeaf leaf = new LeafCache(new LeafIssuer(ca)).leafFor("e.example", pool).get(5, TimeUnit.SECONDS);
        leaf.chain()[0] = null;
        assertThat(leaf.chain()[0]).isNotNull();
        assertThat(leaf.toString()).contains("key=****");
    }

}
