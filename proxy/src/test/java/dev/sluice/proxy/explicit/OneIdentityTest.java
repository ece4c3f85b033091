package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One identity or none, over real sockets: a request with more than one Proxy-Authorization field, or
 * one with a list value, is 407 and authenticates as none of them (not even as {@code default}, which
 * this policy has); a repeated or list-valued Host is 400. The origin sees none of these requests.
 */
class OneIdentityTest {

    private static final String ALPHA_TOKEN = "alpha-token-for-tests";
    private static final String BETA_TOKEN = "beta-token-for-tests";
    private static RecordingOrigin origin;
    private static SluiceFixture sluice;
    private static final AtomicInteger counter = new AtomicInteger();

    @BeforeAll
    static void start() throws Exception {
        origin = new RecordingOrigin();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  alpha:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: origin.test
                        ports: [%4$d]
                  beta:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: origin.test
                        ports: [%4$d]
                  default:
                    allow:
                      - host: origin.test
                        ports: [%4$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(sha(ALPHA_TOKEN), sha(BETA_TOKEN), "", origin.port()));
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        origin.close();
    }

    private static String sha(String token) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    }

    private static String basic(String name, String token) {
        return "Basic " + Base64.getEncoder().encodeToString((name + ":" + token).getBytes(StandardCharsets.UTF_8));
    }

    private static String head(String path) {
        return "GET http://origin.test:" + origin.port() + path + " HTTP/1.1\r\nHost: origin.test\r\n";
    }

    @Test
    void oneValidProxyAuthorizationAuthenticates() throws IOException {
        String path = "/single-" + counter.incrementAndGet();
        RawHttp.Response response = send(head(path) + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n\r\n");
        assertThat(response.status()).isEqualTo(200);
        assertThat(awaitRecord(path).path("extension").asText()).isEqualTo("alpha");
    }

    @Test
    void twoProxyAuthorizationFieldsOfTwoValidExtensionsAuthenticateAsNeither() throws IOException {
        assertRefusedAsNoOne(head("/two-" + counter.incrementAndGet())
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n"
                + "Proxy-Authorization: " + basic("beta", BETA_TOKEN) + "\r\n\r\n");
    }

    @Test
    void aValidProxyAuthorizationFollowedByAnInvalidOneAuthenticatesAsNoOne() throws IOException {
        assertRefusedAsNoOne(head("/valid-then-invalid-" + counter.incrementAndGet())
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n"
                + "Proxy-Authorization: " + basic("alpha", "wrong") + "\r\n\r\n");
    }

    @Test
    void theSameValidProxyAuthorizationTwiceIsStillRefused() throws IOException {
        assertRefusedAsNoOne(head("/same-twice-" + counter.incrementAndGet())
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n"
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n\r\n");
    }

    @Test
    void aProxyAuthorizationListValueAuthenticatesAsNoOne() throws IOException {
        assertRefusedAsNoOne(head("/list-" + counter.incrementAndGet())
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + ", " + basic("beta", BETA_TOKEN) + "\r\n\r\n");
    }

    @Test
    void repeatedHostIsRefused() throws IOException {
        String path = "/host-twice-" + counter.incrementAndGet();
        assertMalformed(path, head(path) + "Host: other.test\r\n\r\n");
    }

    @Test
    void listValuedHostIsRefused() throws IOException {
        String path = "/host-list-" + counter.incrementAndGet();
        assertMalformed(path, "GET http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                + "Host: origin.test, other.test\r\n\r\n");
    }

    @Test
    void aRepeatedHostFromAnIdentifiedExtensionIsRecordedUnderThatExtension() throws IOException {
        String path = "/host-twice-named-" + counter.incrementAndGet();
        assertMalformed(path, "GET http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                + "Proxy-Authorization: " + basic("alpha", ALPHA_TOKEN) + "\r\n"
                + "Host: origin.test\r\nHost: other.test\r\n\r\n");
        assertThat(awaitRecord(path).path("extension").asText()).isEqualTo("alpha");
    }

    @Test
    void contentLengthWithTransferEncodingFromAnIdentifiedExtensionNamesIt() throws IOException {
        String path = "/cl-te-named-" + counter.incrementAndGet();
        RawHttp.Response response = send("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                + "Host: origin.test\r\nProxy-Authorization: " + basic("beta", BETA_TOKEN) + "\r\n"
                + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
        assertThat(response.status()).isEqualTo(400);
        JsonNode record = org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
                .until(() -> sluice.audit().stream().filter(r -> "ambiguous_framing".equals(r.path("reason").asText(null)))
                        .findFirst().orElse(null), r -> r != null);
        assertThat(record.path("extension").asText()).isEqualTo("beta");
        assertThat(record.toString()).doesNotContain(BETA_TOKEN);
    }

    private void assertRefusedAsNoOne(String request) throws IOException {
        String path = request.substring(request.indexOf(String.valueOf(origin.port())) + String.valueOf(origin.port()).length(),
                request.indexOf(" HTTP/1.1"));
        RawHttp.Response response = send(request);
        assertThat(response.status()).isEqualTo(407);
        assertThat(response.body()).isEqualTo("sluice: unknown_extension\n");
        assertThat(response.header("proxy-authenticate")).startsWith("Basic");
        JsonNode record = awaitRecord(path);
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("reason").asText()).isEqualTo("unknown_extension");
        assertThat(record.path("error").asText()).isEqualTo("Proxy-Authorization repeated or a list");
        assertThat(record.has("extension")).as("the record names no extension").isFalse();
        assertThat(record.toString()).doesNotContain(ALPHA_TOKEN).doesNotContain(BETA_TOKEN);
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals(path));
    }

    private void assertMalformed(String path, String request) throws IOException {
        RawHttp.Response response = send(request);
        assertThat(response.status()).isEqualTo(400);
        assertThat(response.body()).isEqualTo("sluice: malformed_request\n");
        JsonNode record = awaitRecord(path);
        assertThat(record.path("reason").asText()).isEqualTo("malformed_request");
        assertThat(record.path("error").asText()).isEqualTo("Host repeated or a list");
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals(path));
    }

    private static RawHttp.Response send(String request) throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            return raw.send(request).read();
        }
    }

    private static JsonNode awaitRecord(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).findFirst().orElse(null), r -> r != null);
    }
}
