package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Identification on the explicit listener when the policy has no {@code default} extension. */
class IdentityTest {

    private static final String TOKEN = "s3cret-token-for-tests";
    private static RecordingOrigin origin;
    private static SluiceFixture sluice;

    @BeforeAll
    static void start() throws Exception {
        origin = new RecordingOrigin();
        String sha = HexFormat.of().formatHex(
                MessageDigest.getInstance("SHA-256").digest(TOKEN.getBytes(StandardCharsets.UTF_8)));
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  github:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: origin.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(sha, origin.port()));
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        origin.close();
    }

    private String url(String path) {
        return "http://origin.test:" + origin.port() + path;
    }

    @Test
    void noCredentialsAndNoDefaultExtensionGets407WithAChallenge() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("GET " + url("/anon") + " HTTP/1.1\r\nHost: origin.test\r\n\r\n")
                    .read();
            assertThat(response.status()).isEqualTo(407);
            assertThat(response.header("proxy-authenticate")).startsWith("Basic realm=\"sluice\"");
            assertThat(response.body()).isEqualTo("sluice: unknown_extension\n");
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/anon")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("reason").asText()).isEqualTo("unknown_extension");
        assertThat(record.has("extension")).isFalse();
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals("/anon"));
    }

    @Test
    void wrongTokenGets407AndTheTokenNeverReachesTheAuditLog() {
        CurlResult result = Curl.run(List.of("-x", "http://github:wrong-token@127.0.0.1:" + sluice.port(),
                url("/wrong")));
        assertThat(result.httpStatus()).isEqualTo(407);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .anyMatch(r -> r.path("url.path").asText().equals("/wrong")));
        assertThat(sluice.audit().toString()).doesNotContain("wrong-token").doesNotContain(TOKEN);
    }

    @Test
    void rightTokenReachesItsAllowlistAndProxyAuthorizationIsNotForwarded() {
        CurlResult result = Curl.run(List.of("-x", "http://github:" + TOKEN + "@127.0.0.1:" + sluice.port(),
                url("/right")));
        assertThat(result.httpStatus()).isEqualTo(200);
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/right"))
                .findFirst().orElseThrow();
        assertThat(seen.headers()).doesNotContainKey("proxy-authorization");
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/right")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("extension").asText()).isEqualTo("github");
        assertThat(sluice.audit().toString()).doesNotContain(TOKEN);
    }
}
