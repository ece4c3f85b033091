package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Every request gets exactly one audit line: none lost, none doubled. */
class AuditCountTest {

    static final int REQUESTS = 10_000;
    static final int CLIENTS = 8;

    @Test
    void tenThousandRequestsGiveExactlyTenThousandAuditLines() throws Exception {
        try (RecordingOrigin origin = new RecordingOrigin();
             SluiceFixture sluice = SluiceFixture.start("""
                     version: 1
                     extensions:
                       default:
                         allow:
                           - host: origin.test
                             ports: [%d]
                     network:
                       allow_private: ["127.0.0.1/32"]
                       hosts:
                         origin.test: 127.0.0.1
                     listen:
                       proxy: 127.0.0.1:0
                     """.formatted(origin.port()))) {
            HttpClient client = HttpClient.newBuilder()
                    .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                    .connectTimeout(Duration.ofSeconds(5))
                    .build();
            ExecutorService pool = Executors.newFixedThreadPool(CLIENTS);
            try {
                List<Future<Integer>> results = new ArrayList<>();
                for (int c = 0; c < CLIENTS; c++) {
                    int client0 = c;
                    results.add(pool.submit(() -> {
                        int ok = 0;
                        for (int i = client0; i < REQUESTS; i += CLIENTS) {
                            HttpResponse<String> response = client.send(HttpRequest.newBuilder(
                                    URI.create("http://origin.test:" + origin.port() + "/n/" + i)).build(),
                                    HttpResponse.BodyHandlers.ofString());
                            if (response.statusCode() == 200) {
                                ok++;
                            }
                        }
                        return ok;
                    }));
                }
                int ok = 0;
                for (Future<Integer> f : results) {
                    ok += f.get();
                }
                assertThat(ok).isEqualTo(REQUESTS);
            } finally {
                pool.shutdownNow();
            }
            sluice.stop();
            var records = sluice.audit();
            assertThat(records).hasSize(REQUESTS);
            assertThat(records.stream().map(r -> r.path("url.path").asText()).distinct().count()).isEqualTo(REQUESTS);
            assertThat(records).allMatch(r -> r.path("decision").asText().equals("allow")
                    && r.path("http.response.status_code").asInt() == 200);
        }
    }
}
