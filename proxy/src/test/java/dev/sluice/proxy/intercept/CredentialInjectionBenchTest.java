package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sluice.proxy.credential.PlaceholderKey;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Requests per second on the intercepted path with a placeholder swapped in versus the same request
 * with an ordinary key (no injection), same Sluice, same origin, alternating rounds. Runs only with
 * {@code -Dsluice.bench.credentials=true}; prints the figures.
 */
class CredentialInjectionBenchTest {

    @TempDir
    Path dir;

    @Test
    void injectionVersusNone() throws Exception {
        assumeTrue(Boolean.getBoolean("sluice.bench.credentials"), "set -Dsluice.bench.credentials=true");
        TestTls tls = TestTls.create(dir.resolve("tls"), "api.llm.test");
        try (RecordingOrigin origin = RecordingOrigin.tls(tls, false)) {
            Path key = dir.resolve("k");
            Files.writeString(key, "sk-real-0123456789abcdefghij");
            try (SluiceFixture sluice = SluiceFixture.start("""
                    version: 1
                    extensions:
                      default:
                        allow: [{ host: api.llm.test, ports: [%1$d] }]
                        credentials: [llm]
                    network:
                      allow_private: ["127.0.0.1/32"]
                      hosts: { api.llm.test: 127.0.0.1 }
                    inspect: { api.llm.test: {} }
                    tls: { extra_trust: ["%2$s"] }
                    credentials:
                      llm:
                        source: { file: "%3$s" }
                        inject: { hosts: [api.llm.test], ports: [%1$d], header: authorization }
                    listen:
                      proxy: 127.0.0.1:0
                    """.formatted(origin.port(), tls.caPem().toAbsolutePath(), key))) {
                String ph = PlaceholderKey.loadOrCreate(sluice.dataDir()).placeholder("default", "llm");
                HttpClient client = HttpClient.newBuilder()
                        .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                        .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"))).build();
                URI uri = URI.create("https://api.llm.test:" + origin.port() + "/v1/chat");
                int threads = 4;
                int perRound = Integer.getInteger("sluice.bench.requests", 2000);
                ExecutorService pool = Executors.newFixedThreadPool(threads);
                try {
                    rate(client, pool, uri, "Bearer " + ph, 300, threads);
                    rate(client, pool, uri, "Bearer sk-own-0123456789abcdefghij", 300, threads);
                    double[] with = new double[3];
                    double[] without = new double[3];
                    for (int round = 0; round < 3; round++) {
                        without[round] = rate(client, pool, uri, "Bearer sk-own-0123456789abcdefghij", perRound, threads);
                        with[round] = rate(client, pool, uri, "Bearer " + ph, perRound, threads);
                    }
                    System.out.printf("credential injection bench: %d requests x 3 rounds, %d clients%n", perRound,
                            threads);
                    System.out.printf("  without injection: %.0f %.0f %.0f req/s%n", without[0], without[1], without[2]);
                    System.out.printf("  with injection:    %.0f %.0f %.0f req/s%n", with[0], with[1], with[2]);
                } finally {
                    pool.shutdownNow();
                }
            }
        }
    }

    private static double rate(HttpClient client, ExecutorService pool, URI uri, String auth, int total, int threads)
            throws Exception {
        long start = System.nanoTime();
        List<Future<Integer>> futures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            futures.add(pool.submit(() -> {
                int ok = 0;
                for (int i = 0; i < total / threads; i++) {
                    HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).header("Authorization", auth)
                            .GET().build(), HttpResponse.BodyHandlers.ofString());
                    ok += r.statusCode() == 200 ? 1 : 0;
                }
                return ok;
            }));
        }
        int ok = 0;
        for (Future<Integer> f : futures) {
            ok += f.get();
        }
        assertThat(ok).isEqualTo(total / threads * threads);
        return ok / ((System.nanoTime() - start) / 1e9);
    }
}
