package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The upstream leg of an intercepted HTTP/2 connection to an HTTP/1.1-only origin: streams one after another reuse the kept-alive
 * HTTP/1.1 upstream connection an earlier stream finished with (UpstreamPool), so five sequential
 * streams cost one origin connection; every stream still has its own record with the pin result of
 * that connection's handshake.
 * curl --http2 with five URLs through Sluice to a recording TLS origin on loopback.
 */
class H2UpstreamReuseTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    @Test
    void sequentialStreamsShareOneKeptAliveUpstreamConnection() throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = RecordingOrigin.tls(tls, false);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath()));
        List<String> command = new ArrayList<>(List.of("curl", "-q", "-sS", "--http2", "-x", sluice.proxyUrl(),
                "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(), "-w", "[%{http_version} %{http_code}]\\n"));
        for (int i = 1; i <= 5; i++) {
            command.add("https://" + HOST + ":" + origin.port() + "/seq/" + i);
        }
        Path out = dir.resolve("out.txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile())
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String text = Files.readString(out);
        assertThat(text.split("\\[2 200]", -1)).as(text).hasSize(6);
        assertThat(origin.requests()).hasSize(5);
        assertThat(origin.connections()).as("origin connections for 5 sequential streams").isEqualTo(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText("").startsWith("/seq/")).count() == 5);
        assertThat(sluice.audit().stream().filter(r -> r.path("url.path").asText("").startsWith("/seq/"))
                .map(r -> r.path("pin").asText())).as("the pin result of the one handshake, as on HTTP/1.1 keep-alive")
                .containsOnly("recorded").hasSize(5);
        // The origin offers no h2 (HTTP/1.1 only): Sluice offered h2 and http/1.1, the origin chose http/1.1.
        assertThat(sluice.audit().stream().filter(r -> r.path("url.path").asText("").startsWith("/seq/"))
                .map(r -> r.path("upstream.protocol").asText())).containsOnly("http/1.1").hasSize(5);
    }
}
