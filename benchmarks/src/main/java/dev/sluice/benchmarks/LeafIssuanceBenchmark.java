package dev.sluice.benchmarks;

import dev.sluice.certs.IssuedLeaf;
import dev.sluice.certs.LeafCache;
import dev.sluice.certs.LeafIssuer;
import dev.sluice.certs.LocalCa;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * What a leaf certificate costs (design.md: issued once per host and cached): {@code issueNewHost}
 * signs a leaf for a host never seen (a P-256 signature by the CA plus encoding), {@code cacheHit}
 * returns the cached leaf of a known host. Average time per operation, in microseconds.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar LeafIssuanceBenchmark -f 1 -wi 2 -i 3 -w 2s -r 2s}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class LeafIssuanceBenchmark {

    private LeafIssuer issuer;
    private LeafCache cache;
    private long next;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Path dir = Files.createTempDirectory("sluice-leaf-bench");
        LocalCa ca = LocalCa.create(dir);
        issuer = new LeafIssuer(ca);
        cache = new LeafCache(issuer);
        cache.leafFor("known.example", Runnable::run).join();
    }

    @Benchmark
    public java.security.cert.X509Certificate[] issueNewHost() throws Exception {
        return issuer.issue("host" + (next++) + ".example");
    }

    @Benchmark
    public IssuedLeaf cacheHit() {
        return cache.leafFor("known.example", Runnable::run).join();
    }
}
