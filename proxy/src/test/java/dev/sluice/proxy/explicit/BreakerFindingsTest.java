package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Found by trying to break Sluice (2026-12-04): a credential must not leave through plain HTTP to a host
 * under {@code inspect} (refused, {@code tls_required}), nor be copied into the audit record's
 * {@code error} field by a malformed-target refusal (the port text and what follows a host are not
 * quoted).
 */
class BreakerFindingsTest {

    /** A made-up GitHub token shape (ghp_ and 36 characters), never a real one. */
    private static final String TOKEN = "ghp_Zq8Rk2Lm9Xv4Tw7Yp3Nc6Bd1Hf5Js0Ga2Ke8";

    private static RecordingOrigin origin;
    private static SluiceFixture sluice;

    @BeforeAll
    static void start() throws Exception {
        origin = new RecordingOrigin();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: llm.test
                        ports: [%1$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    llm.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                inspect:
                  llm.test: { redact: true }
                redaction:
                  action: redact
                """.formatted(origin.port()));
    }

    @AfterAll
    static void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private static JsonNode awaitRecord(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(
                () -> sluice.audit().stream().filter(r -> r.path("url.path").asText("").startsWith(path)).findFirst()
                        .orElse(null),
                r -> r != null);
    }

    /**
     * A host under {@code inspect} with {@code redact: true} is allowed on port 80 by a rule without
     * {@code ports} (the default is 80 and 443). A plain-HTTP request to it would skip everything
     * {@code inspect} promises (redaction, red flags, pins), so it is refused, 403 {@code tls_required},
     * with its record, and nothing reaches the origin.
     */
    @Test
    void plainHttpToAnInspectedHostIsRefusedAsTlsRequired() throws Exception {
        String body = "{\"prompt\":\"my key is " + TOKEN + "\"}";
        RawHttp.Response response;
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            response = raw.send("POST http://llm.test:" + origin.port() + "/v1/plain?k=" + TOKEN + " HTTP/1.1\r\n"
                    + "Host: llm.test:" + origin.port() + "\r\n"
                    + "Content-Type: application/json\r\n"
                    + "X-Note: " + TOKEN + "\r\n"
                    + "Content-Length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n"
                    + "Connection: close\r\n\r\n" + body).read();
        }
        assertThat(response.status()).isEqualTo(403);
        assertThat(response.body()).contains("tls_required");
        JsonNode record = awaitRecord("/v1/plain");
        assertThat(record.path("reason").asText()).isEqualTo("tls_required");
        assertThat(record.path("rule").asText()).isEqualTo("inspect");
        assertThat(record.toString()).doesNotContain(TOKEN);
        assertThat(origin.requests()).noneMatch(r -> r.uri().startsWith("/v1/plain"));
    }

    /**
     * "Secrets never logged": url.path is redacted in records, but the {@code error} of a
     * malformed-target refusal quotes the client's port text (and, for CONNECT, the authority) as sent.
     * A URL written {@code http://user:TOKEN/...} (userinfo without the {@code @host}) puts the token
     * in the port.
     */
    @Test
    void aMalformedTargetRefusalDoesNotCopyACredentialIntoTheAuditRecord() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            assertThat(raw.send("GET http://x-access-token:" + TOKEN + "/repo.git HTTP/1.1\r\n"
                    + "Connection: close\r\n\r\n").read().status()).isEqualTo(400);
        }
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            assertThat(raw.send("CONNECT http://llm.test/" + TOKEN + " HTTP/1.1\r\n"
                    + "Connection: close\r\n\r\n").read().status()).isEqualTo(400);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "malformed_target".equals(r.path("reason").asText())).count() >= 2);
        // The first 24 characters are enough to use most of a token, so no fragment may appear either.
        assertThat(sluice.audit().toString()).doesNotContain(TOKEN.substring(0, 24));
    }
}
