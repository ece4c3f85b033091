package dev.sluice.proxy.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Timeout records tell the truth, over real sockets: an exchange whose request body or response body
 * stalls is cut by {@code limits.idle_timeout} and its record says {@code idle_timeout} (not "downstream
 * closed"); so does an idle tunnel; a request head that never completes is {@code header_timeout}.
 */
class TimeoutRecordTest {

    private static RawOrigin stallingOrigin;
    private static SluiceFixture sluice;

    @BeforeAll
    static void start() throws Exception {
        stallingOrigin = RawOrigin.start(TimeoutRecordTest::stall);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: stall.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    stall.test: 127.0.0.1
                limits:
                  idle_timeout: 1s
                  header_timeout: 500ms
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(stallingOrigin.port()));
    }

    /**
     * An origin that reads a request head and, for {@code /stall-response}, answers a head and part of
     * the body, then stalls; for anything else it stalls at once. It closes when Sluice does.
     */
    private static Void stall(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            int b;
            while (!head.toString().endsWith("\r\n\r\n") && (b = in.read()) >= 0) {
                head.append((char) b);
            }
            if (head.toString().contains("/stall-response")) {
                OutputStream out = socket.getOutputStream();
                out.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npart of it".getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
            while (in.read() >= 0) {
                // wait for Sluice to close
            }
        } catch (IOException e) {
            // closed
        }
        return null;
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        stallingOrigin.close();
    }

    @Test
    void stalledRequestBodyIsRecordedAsIdleTimeout() throws Exception {
        try (Socket client = new Socket(sluice.address().getAddress(), sluice.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write(("POST http://stall.test:" + stallingOrigin.port()
                    + "/stall-request HTTP/1.1\r\nHost: stall.test\r\nContent-Length: 1000\r\n\r\nonly some")
                    .getBytes(StandardCharsets.US_ASCII));
            client.getOutputStream().flush();
            client.getInputStream().readAllBytes(); // until Sluice closes
        }
        JsonNode record = awaitRecord("url.path", "/stall-request");
        assertThat(record.path("error").asText()).startsWith("idle_timeout");
    }

    @Test
    void stalledResponseBodyIsRecordedAsIdleTimeout() throws Exception {
        try (Socket client = new Socket(sluice.address().getAddress(), sluice.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write(("GET http://stall.test:" + stallingOrigin.port()
                    + "/stall-response HTTP/1.1\r\nHost: stall.test\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            client.getOutputStream().flush();
            String seen = new String(client.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(seen).startsWith("HTTP/1.1 200").endsWith("part of it");
        }
        JsonNode record = awaitRecord("url.path", "/stall-response");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(record.path("error").asText()).startsWith("idle_timeout");
    }

    @Test
    void idleTunnelIsRecordedAsIdleTimeout() throws Exception {
        try (Socket client = new Socket(sluice.address().getAddress(), sluice.port())) {
            client.setSoTimeout(10_000);
            String target = "stall.test:" + stallingOrigin.port();
            client.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            String seen = new String(client.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(seen).startsWith("HTTP/1.1 200");
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "tunnel".equals(r.path("tls.mode").asText())).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("error").asText()).startsWith("idle_timeout");
    }

    @Test
    void incompleteRequestHeadIsRecordedAsHeaderTimeout() throws Exception {
        try (Socket client = new Socket(sluice.address().getAddress(), sluice.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write("GET http://stall.test/ HTTP/1.1\r\nHost: st".getBytes(StandardCharsets.US_ASCII));
            client.getOutputStream().flush();
            assertThat(client.getInputStream().read()).isEqualTo(-1);
        }
        JsonNode record = awaitRecord("reason", "header_timeout");
        assertThat(record.path("decision").asText()).isEqualTo("deny");
    }

    @Test
    void requestHeadStalledUntilTheIdleTimeoutIsRecordedAsIdleTimeout() throws Exception {
        // idle_timeout shorter than header_timeout: the idle timeout ends the connection, and says so.
        try (SluiceFixture quick = SluiceFixture.start(quickPolicy("idle_timeout: 500ms\n  header_timeout: 10s"));
             Socket client = new Socket(quick.address().getAddress(), quick.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write("GET http://stall.test/ HTTP/1.1\r\nHo".getBytes(StandardCharsets.US_ASCII));
            client.getOutputStream().flush();
            assertThat(client.getInputStream().read()).isEqualTo(-1);
            JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> quick.audit().stream()
                    .filter(r -> "idle_timeout".equals(r.path("reason").asText())).findFirst().orElse(null),
                    r -> r != null);
            assertThat(record.path("rule").asText()).isEqualTo("limits.idle_timeout");
            assertThat(record.path("error").asText()).startsWith("request head incomplete");
        }
    }

    @Test
    void anIdleKeptAliveConnectionWithoutAStartedHeadLeavesNoExtraRecord() throws Exception {
        try (SluiceFixture quick = SluiceFixture.start(quickPolicy("idle_timeout: 500ms"));
             Socket client = new Socket(quick.address().getAddress(), quick.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream().write("GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            client.getOutputStream().flush();
            String answer = new String(client.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(answer).startsWith("HTTP/1.1 403");
            quick.stop();
            assertThat(quick.audit()).hasSize(1);
        }
    }

    private static String quickPolicy(String limits) {
        return "version: 1\nextensions:\n  default:\n    allow: []\nlimits:\n  " + limits
                + "\nlisten:\n  proxy: 127.0.0.1:0\n";
    }

    private static JsonNode awaitRecord(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> value.equals(r.path(field).asText(null))).findFirst().orElse(null), r -> r != null);
    }
}
