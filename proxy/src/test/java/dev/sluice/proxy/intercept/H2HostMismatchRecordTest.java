package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static dev.sluice.proxy.intercept.H2InterceptionTest.HOST;
import static dev.sluice.proxy.intercept.H2InterceptionTest.connectTunnel;
import static dev.sluice.proxy.intercept.H2InterceptionTest.frame;
import static dev.sluice.proxy.intercept.H2InterceptionTest.h2Over;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Found by trying to break Sluice (2026-12-04): an HTTP/2 stream on an intercepted host that is refused
 * before it reaches a request phase gets its own record, as an HTTP/1.1 request does ("every refusal has
 * a status, a short reason and an audit record"): a {@code host} field naming another host than its
 * {@code :authority} is answered 421 {@code host_mismatch}; a header block the codec refuses is reset
 * with PROTOCOL_ERROR and recorded as {@code malformed_request}.
 */
class H2HostMismatchRecordTest {

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    @BeforeEach
    void start() throws Exception {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("ok")));
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
                  %1$s: { redact: true, pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), origin.caPem().toAbsolutePath()));
    }

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    /** HPACK (RFC 7541 section 6.2.2) literal field without indexing, new name, no Huffman. */
    private static void literal(ByteArrayOutputStream block, String name, String value) {
        byte[] n = name.getBytes(StandardCharsets.US_ASCII);
        byte[] v = value.getBytes(StandardCharsets.US_ASCII);
        block.write(0x00);
        block.write(n.length);
        block.writeBytes(n);
        block.write(v.length);
        block.writeBytes(v);
    }

    /**
     * Writes the client preface, an empty SETTINGS and stream 1's HEADERS (END_STREAM | END_HEADERS): a
     * GET of {@code path} on the tunnel's host, with one more field {@code name: value}.
     */
    private void sendOneStream(SSLSocket tls, String path, String name, String value) throws Exception {
        OutputStream out = tls.getOutputStream();
        out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.write(frame(0x4, 0, 0, new byte[0])); // SETTINGS
        ByteArrayOutputStream block = new ByteArrayOutputStream();
        literal(block, ":method", "GET");
        literal(block, ":scheme", "https");
        literal(block, ":path", path);
        literal(block, ":authority", HOST + ":" + origin.httpsPort());
        literal(block, name, value);
        out.write(frame(0x1, 0x5, 1, block.toByteArray())); // HEADERS, END_STREAM | END_HEADERS
        out.flush();
    }

    @Test
    void anH2StreamWhoseHostDiffersFromItsAuthorityIsRefusedWithItsOwnRecord() throws Exception {
        try (Socket tunnel = connectTunnel(sluice, origin.httpsPort());
             SSLSocket tls = h2Over(sluice, tunnel, origin.httpsPort())) {
            sendOneStream(tls, "/h2-host-mismatch", "host", "other.test:" + origin.httpsPort());
            // The stream's record, not the tunnel's (CONNECT) record, must say why it was refused.
            JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                    .filter(r -> !"CONNECT".equals(r.path("http.request.method").asText())).findFirst()
                    .orElse(null), r -> r != null);
            assertThat(record.path("decision").asText()).isEqualTo("deny");
            assertThat(record.path("reason").asText()).isEqualTo("host_mismatch");
        }
        List<?> served = origin.server().getAllServeEvents();
        assertThat(served).isEmpty();
    }
    /**
     * A header block the codec itself refuses (an upper-case field name, RFC 9113 section 8.2.1) never
     * reaches a request phase: the stream is reset with PROTOCOL_ERROR, and still gets one record of its
     * own that says so, without the field's value.
     */
    @Test
    void anH2StreamWithAMalformedHeaderBlockIsResetWithItsOwnRecord() throws Exception {
        try (Socket tunnel = connectTunnel(sluice, origin.httpsPort());
             SSLSocket tls = h2Over(sluice, tunnel, origin.httpsPort())) {
            sendOneStream(tls, "/h2-upper-case", "X-Secret-Note", "value-never-recorded");
            JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                    .filter(r -> !"CONNECT".equals(r.path("http.request.method").asText())).findFirst()
                    .orElse(null), r -> r != null);
            assertThat(record.path("decision").asText()).isEqualTo("deny");
            assertThat(record.path("reason").asText()).isEqualTo("malformed_request");
            assertThat(record.path("error").asText()).contains("PROTOCOL_ERROR");
            assertThat(record.toString()).doesNotContain("value-never-recorded");
        }
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }
}
