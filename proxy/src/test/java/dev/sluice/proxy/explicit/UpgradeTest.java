package dev.sluice.proxy.explicit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Protocol upgrades (RFC 9110 section 7.8) other than a WebSocket handshake are refused with
 * {@code 501 upgrade_not_supported} and an audit line, never stripped and forwarded as a plain request:
 * curl's h2c upgrade, an upgrade named only in {@code Connection}; the origin sees none of these. A
 * WebSocket handshake goes on with its fields (an origin that does not switch answers as usual;
 * WebSocketTest covers the switch), and inside an intercepted tunnel follows the host's
 * {@code websocket} mode.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UpgradeTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    static Path dir;
    private RecordingOrigin origin;
    private Origins tlsOrigin;
    private SluiceFixture sluice;

    @BeforeAll
    void start() throws Exception {
        origin = new RecordingOrigin();
        tlsOrigin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        tlsOrigin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("plain answer")));
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%1$d]
                      - host: %2$s
                        ports: [%3$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                    %2$s: 127.0.0.1
                inspect:
                  %2$s: {}
                tls:
                  extra_trust: ["%4$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port(), HOST, tlsOrigin.httpsPort(), tlsOrigin.caPem().toAbsolutePath()));
    }

    @AfterAll
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        tlsOrigin.close();
        origin.close();
    }

    private JsonNode awaitRecord(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).findFirst().orElse(null), r -> r != null);
    }

    private long seenByOrigin(String path) {
        return origin.requests().stream().filter(r -> r.uri().equals(path)).count();
    }

    @Test
    void aWebSocketHandshakeTheOriginDeclinesIsRelayedAsItsAnswerAndTheConnectionServesTheNextRequest()
            throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response declined = raw.send("GET http://origin.test:" + origin.port() + "/ws HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n"
                    + "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").read();
            // The origin (plain HTTP, no WebSocket) answers 200: that answer, not a switch, reaches the client.
            assertThat(declined.status()).isEqualTo(200);

            RawHttp.Response next = raw.send("GET http://origin.test:" + origin.port() + "/after-ws HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n\r\n").read();
            assertThat(next.status()).isEqualTo(200);
        }
        JsonNode record = awaitRecord("/ws");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(record.has("websocket.mode")).isFalse();
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/ws")).findFirst()
                .orElseThrow();
        assertThat(seen.header("upgrade")).isEqualTo("websocket");
        assertThat(seen.header("sec-websocket-key")).isEqualTo("dGhlIHNhbXBsZSBub25jZQ==");
        assertThat(seenByOrigin("/after-ws")).isEqualTo(1);
    }

    @Test
    void curlsH2cUpgradeIsRefused() {
        CurlResult result = Curl.run(List.of("--http2", "-x", sluice.proxyUrl(),
                "http://origin.test:" + origin.port() + "/h2c"));
        assertThat(result.exitCode()).as(result.stderr()).isZero();
        assertThat(result.httpStatus()).isEqualTo(501);
        assertThat(result.body()).isEqualTo("sluice: upgrade_not_supported\n");
        JsonNode record = awaitRecord("/h2c");
        assertThat(record.path("reason").asText()).isEqualTo("upgrade_not_supported");
        assertThat(record.path("error").asText()).contains("h2c");
        assertThat(seenByOrigin("/h2c")).isZero();
    }

    @Test
    void anUpgradeNamedOnlyInConnectionIsRefusedToo() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response refused = raw.send("GET http://origin.test:" + origin.port() + "/only-connection HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n"
                    + "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").read();
            assertThat(refused.status()).isEqualTo(501);
        }
        assertThat(awaitRecord("/only-connection").path("reason").asText()).isEqualTo("upgrade_not_supported");
        assertThat(seenByOrigin("/only-connection")).isZero();
    }

    @Test
    void twoUpgradeFieldsAreOneListInTheRefusal() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response refused = raw.send("GET http://origin.test:" + origin.port() + "/two-upgrades HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n"
                    + "Connection: Upgrade\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n\r\n").read();
            assertThat(refused.status()).isEqualTo(501);
        }
        JsonNode record = awaitRecord("/two-upgrades");
        assertThat(record.path("reason").asText()).isEqualTo("upgrade_not_supported");
        assertThat(record.path("error").asText()).contains("upgrade to websocket, h2c is not supported");
        assertThat(seenByOrigin("/two-upgrades")).isZero();
    }

    @Test
    void anUpgradeWithABodyIsRefusedAndTheBodyIsNotForwarded() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response refused = raw.send("POST http://origin.test:" + origin.port() + "/upgrade-post HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n"
                    + "Upgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
                    + "Content-Length: 5\r\n\r\nhello").read();
            assertThat(refused.status()).isEqualTo(501);
            assertThat(refused.header("Connection")).isEqualTo("close");
            assertThat(raw.closedByPeer()).isTrue();
        }
        assertThat(seenByOrigin("/upgrade-post")).isZero();
    }

    @Test
    void anHttp2SettingsFieldWithoutAnUpgradeIsNeverForwarded() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response response = raw.send("GET http://origin.test:" + origin.port() + "/settings HTTP/1.1\r\n"
                    + "Host: origin.test:" + origin.port() + "\r\n"
                    + "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\nX-Kept: yes\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(200);
        }
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/settings")).findFirst()
                .orElseThrow();
        assertThat(seen.header("http2-settings")).isNull();
        assertThat(seen.header("x-kept")).isEqualTo("yes");
    }

    @Test
    void javaWebSocketClientInsideAnInterceptedTunnelGetsTheOriginsAnswerWhenItDoesNotSwitch() throws Exception {
        HttpClient client = HttpClient.newBuilder()
                .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        Throwable failure = catchThrowable(() -> client.newWebSocketBuilder()
                .buildAsync(URI.create("wss://" + HOST + ":" + tlsOrigin.httpsPort() + "/v1/realtime"),
                        new WebSocket.Listener() { })
                .get(30, TimeUnit.SECONDS));
        assertThat(failure).isNotNull();
        Throwable cause = failure instanceof CompletionException || failure.getCause() != null
                ? failure.getCause() : failure;
        assertThat(cause).isInstanceOf(WebSocketHandshakeException.class);
        // inspect: {} means websocket: inspect; WireMock speaks no WebSocket and answers 200, which is relayed.
        WebSocketHandshakeException handshake = (WebSocketHandshakeException) cause;
        assertThat(handshake.getResponse().statusCode()).isEqualTo(200);

        JsonNode record = awaitRecord("/v1/realtime");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(record.has("websocket.mode")).isFalse();
        assertThat(tlsOrigin.server().getAllServeEvents()).anySatisfy(e -> {
            assertThat(e.getRequest().getUrl()).isEqualTo("/v1/realtime");
            assertThat(e.getRequest().getHeader("Upgrade")).isEqualTo("websocket");
            assertThat(e.getRequest().containsHeader("Sec-WebSocket-Extensions")).isFalse();
        });
    }
}
