package dev.sluice.proxy.explicit;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The explicit listener end to end: real clients (curl, java.net.http.HttpClient, raw sockets) through
 * a real Sluice to real origins on loopback (a recording Netty origin, WireMock over HTTP and TLS).
 */
class ExplicitProxyTest {

    private static RecordingOrigin origin;
    private static Origins wiremock;
    private static SluiceFixture sluice;
    private static int proxyPort;

    @BeforeAll
    static void start() throws Exception {
        origin = new RecordingOrigin();
        wiremock = Origins.start();
        wiremock.server().stubFor(get(urlEqualTo("/tls")).willReturn(aResponse().withStatus(200).withBody("tls ok")));
        proxyPort = SluiceFixture.freePort();
        int http = origin.port();
        int https = wiremock.httpsPort();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%1$d, %2$d]
                      - host: example.com
                        ports: [%1$d]
                      - host: metadata.test
                        ports: [80]
                      - cidr: 0.0.0.0/0
                        ports: [80, %3$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                    example.com: 127.0.0.1
                    evilexample.com: 127.0.0.1
                    metadata.test: 169.254.169.254
                listen:
                  proxy: 127.0.0.1:%3$d
                  admin: 127.0.0.1:0
                """.formatted(http, https, proxyPort));
    }

    @AfterAll
    static void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (wiremock != null) {
            wiremock.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private static String originUrl(String path) {
        return "http://origin.test:" + origin.port() + path;
    }

    private static HttpClient httpClient() {
        return HttpClient.newBuilder()
                .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", proxyPort)))
                .sslContext(wiremock.tls().clientContext())
                .connectTimeout(Duration.ofSeconds(5))
                .build();
    }

    private static JsonNode awaitAudit(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(
                () -> sluice.audit().stream().filter(r -> value.equals(r.path(field).asText(null))).findFirst()
                        .orElse(null),
                r -> r != null);
    }

    private static String sha256(byte[] data) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    }

    // ---- allowed traffic ----------------------------------------------------------------------

    @Test
    void curlGetReachesTheOriginWithHostRebuiltAndHopByHopFieldsRemoved() {
        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(),
                "-H", "Connection: X-Secret-Hop", "-H", "X-Secret-Hop: 1", "-H", "Keep-Alive: timeout=5",
                "-H", "Proxy-Connection: keep-alive", "-H", "TE: trailers",
                originUrl("/curl-get?q=1")));

        assertThat(result.exitCode()).isZero();
        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(result.body()).startsWith("ok 0 ");
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/curl-get?q=1"))
                .findFirst().orElseThrow();
        assertThat(seen.method()).isEqualTo("GET");
        assertThat(seen.header("host")).isEqualTo("origin.test:" + origin.port());
        assertThat(seen.headers()).doesNotContainKeys("x-secret-hop", "keep-alive", "proxy-connection", "te",
                "proxy-authorization");
        assertThat(seen.header("connection")).isNull();

        JsonNode record = awaitAudit("url.path", "/curl-get?q=***");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("extension").asText()).isEqualTo("default");
        assertThat(record.path("listener").asText()).isEqualTo("explicit");
        assertThat(record.path("server.address").asText()).isEqualTo("origin.test");
        assertThat(record.path("network.peer.address").asText()).isEqualTo("127.0.0.1");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(record.path("rule").asText()).isEqualTo("extensions.default.allow[0]");
        assertThat(record.path("bytes.sent").asLong()).isPositive();
        assertThat(record.path("bytes.received").asLong()).isPositive();
    }

    @Test
    void httpClientGetAndKeepAliveUseOneUpstreamConnection() throws Exception {
        HttpClient client = httpClient();
        int before = origin.connections();
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> response = client.send(
                    HttpRequest.newBuilder(URI.create(originUrl("/keepalive/" + i))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
        }
        List<String> originConnections = origin.requests().stream()
                .filter(r -> r.uri().startsWith("/keepalive/")).map(r -> r.uri()).toList();
        assertThat(originConnections).hasSize(5);
        assertThat(origin.connections() - before).isEqualTo(1);
    }

    @Test
    void postOfFiveMegabytesArrivesWhole(@TempDir Path dir) throws Exception {
        byte[] body = new byte[5 * 1024 * 1024];
        new Random(7).nextBytes(body);
        Path file = dir.resolve("body.bin");
        Files.write(file, body);

        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), "--data-binary", "@" + file,
                "-H", "Content-Type: application/octet-stream", originUrl("/upload-5mb")));

        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("ok " + body.length + " " + sha256(body));
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/upload-5mb"))
                .findFirst().orElseThrow();
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(body.length));
    }

    @Test
    void chunkedUploadArrivesWholeAndChunked(@TempDir Path dir) throws Exception {
        byte[] body = new byte[300_000];
        new Random(11).nextBytes(body);
        Path file = dir.resolve("chunked.bin");
        Files.write(file, body);

        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), "-H", "Transfer-Encoding: chunked",
                "--data-binary", "@" + file, originUrl("/upload-chunked")));

        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("ok " + body.length + " " + sha256(body));
        RecordingOrigin.Seen seen = origin.requests().stream().filter(r -> r.uri().equals("/upload-chunked"))
                .findFirst().orElseThrow();
        assertThat(seen.header("transfer-encoding")).isEqualTo("chunked");
        assertThat(seen.header("content-length")).isNull();
    }

    @Test
    void connectTunnelReachesTheTlsOriginWithItsOwnCertificate() throws Exception {
        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert", wiremock.caPem().toString(),
                "https://origin.test:" + wiremock.httpsPort() + "/tls",
                "--resolve", "origin.test:" + wiremock.httpsPort() + ":127.0.0.1"));
        assertThat(result.exitCode()).as(result.stderr()).isZero();
        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("tls ok");

        HttpResponse<String> response = httpClient().send(HttpRequest.newBuilder(
                URI.create("https://origin.test:" + wiremock.httpsPort() + "/tls")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("tls ok");

        JsonNode record = awaitAudit("tls.mode", "tunnel");
        assertThat(record.path("http.request.method").asText()).isEqualTo("CONNECT");
        assertThat(record.path("server.port").asInt()).isEqualTo(wiremock.httpsPort());
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("bytes.sent").asLong()).isPositive();
        assertThat(record.path("bytes.received").asLong()).isPositive();
    }

    @Test
    void trailingDotAndUpperCaseReachTheSameDecision() {
        CurlResult upper = Curl.run(List.of("-x", sluice.proxyUrl(), "http://EXAMPLE.com.:" + origin.port() + "/dot"));
        assertThat(upper.httpStatus()).isEqualTo(200);
        JsonNode record = awaitAudit("url.path", "/dot");
        assertThat(record.path("server.address").asText()).isEqualTo("example.com");
        assertThat(record.path("rule").asText()).isEqualTo("extensions.default.allow[1]");
    }

    // ---- denials ------------------------------------------------------------------------------

    private static void assertDenied(CurlResult result, int status, String reasonText) {
        assertThat(result.httpStatus()).isEqualTo(status);
        assertThat(result.body()).isEqualTo("sluice: " + reasonText + "\n");
    }

    @Test
    void hostNotAllowlistedIsDeniedForPlainHttp() {
        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), "http://denied.test/x"));
        assertDenied(result, 403, "not_allowlisted");
        JsonNode record = awaitAudit("server.address", "denied.test");
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("reason").asText()).isEqualTo("not_allowlisted");
        assertThat(record.path("rule").asText()).isEqualTo("implicit-deny");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(403);
    }

    @Test
    void hostNotAllowlistedIsDeniedForConnect() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("CONNECT denied-tunnel.test:443 HTTP/1.1\r\n"
                    + "Host: denied-tunnel.test:443\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(403);
            assertThat(response.body()).isEqualTo("sluice: not_allowlisted\n");
            assertThat(raw.closedByPeer()).isTrue();
        }
        JsonNode record = awaitAudit("server.address", "denied-tunnel.test");
        assertThat(record.path("http.request.method").asText()).isEqualTo("CONNECT");
        assertThat(record.path("reason").asText()).isEqualTo("not_allowlisted");
    }

    @Test
    void suffixOfAnAllowedNameIsNotAllowed() {
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://evilexample.com:" + origin.port() + "/")),
                403, "not_allowlisted");
        assertThat(awaitAudit("server.address", "evilexample.com").path("reason").asText())
                .isEqualTo("not_allowlisted");
    }

    @Test
    void portNotListedIsDenied() {
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://origin.test:1/")), 403, "port_not_allowed");
        JsonNode record = awaitAudit("reason", "port_not_allowed");
        assertThat(record.path("server.port").asInt()).isEqualTo(1);
    }

    @Test
    void ipv4MappedIpv6LiteralOfMetadataIsDenied() {
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://[::ffff:169.254.169.254]/latest/meta-data")),
                403, "address_class: metadata");
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://2852039166/latest/meta-data")),
                403, "address_class: metadata");
        List<JsonNode> records = await().atMost(Duration.ofSeconds(10)).until(
                () -> sluice.audit().stream().filter(r -> r.path("url.path").asText().equals("/latest/meta-data"))
                        .toList(), l -> l.size() == 2);
        assertThat(records).allSatisfy(r -> {
            assertThat(r.path("reason").asText()).isEqualTo("address_class");
            assertThat(r.path("rule").asText()).isEqualTo("network.address_class");
        });
    }

    @Test
    void nameResolvingToMetadataIsDenied() {
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://metadata.test/latest")), 403,
                "address_class: metadata");
        JsonNode record = awaitAudit("server.address", "metadata.test");
        assertThat(record.path("reason").asText()).isEqualTo("address_class");
        assertThat(record.has("network.peer.address")).isFalse();
    }

    @Test
    void requestToSluicesOwnListenerIsDenied() {
        assertDenied(Curl.run(List.of("-x", sluice.proxyUrl(), "http://127.0.0.1:" + proxyPort + "/loop")),
                403, "self_loop");
        assertThat(awaitAudit("url.path", "/loop").path("reason").asText()).isEqualTo("self_loop");
    }

    @Test
    void contentLengthWithTransferEncodingIsRefusedAndNothingIsForwarded() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("POST " + originUrl("/smuggle") + " HTTP/1.1\r\n"
                    + "Host: origin.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "0\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: ambiguous_framing\n");
            assertThat(raw.closedByPeer()).isTrue();
        }
        JsonNode record = awaitAudit("reason", "ambiguous_framing");
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals("/smuggle"));
    }

    @Test
    void deniedRequestWithExpectContinueIsAnsweredWithoutItsBody() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 3_000)) {
            // The body is never sent: the answer can only arrive (within RawHttp's 3 s read timeout) if
            // Sluice answers without waiting for it.
            RawHttp.Response response = raw.send("POST http://denied-expect.test/upload HTTP/1.1\r\n"
                    + "Host: denied-expect.test\r\nContent-Length: 10000000\r\nExpect: 100-continue\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(403);
            assertThat(response.header("connection")).isEqualTo("close");
        }
        assertThat(awaitAudit("server.address", "denied-expect.test").path("reason").asText())
                .isEqualTo("not_allowlisted");
    }

    @Test
    void originFormIsRefusedOnTheProxyListener() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("GET /origin-form HTTP/1.1\r\nHost: origin.test\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: malformed_request\n");
        }
    }

    @Test
    void unconvertibleTargetIsMalformed() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("GET http://bad..name/ HTTP/1.1\r\nHost: x\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: malformed_target\n");
        }
    }

    @Test
    void oversizedHeaderBlockGets431() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("GET " + originUrl("/big") + " HTTP/1.1\r\nHost: origin.test\r\n"
                    + "X-Big: " + "a".repeat(40_000) + "\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(431);
            assertThat(response.body()).isEqualTo("sluice: header_too_large\n");
        }
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals("/big"));
    }

    @Test
    void deniedRequestWithoutBodyKeepsTheConnectionAndHttp10Closes() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            raw.send("GET http://denied-ka.test/1 HTTP/1.1\r\nHost: denied-ka.test\r\n\r\n");
            assertThat(raw.read().status()).isEqualTo(403);
            raw.send("GET " + originUrl("/after-denial") + " HTTP/1.1\r\nHost: origin.test\r\n\r\n");
            RawHttp.Response second = raw.read();
            assertThat(second.status()).isEqualTo(200);
            assertThat(second.body()).startsWith("ok 0 ");
            raw.send("GET " + originUrl("/close") + " HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n");
            RawHttp.Response third = raw.read();
            assertThat(third.status()).isEqualTo(200);
            assertThat(third.header("connection")).isEqualTo("close");
            assertThat(raw.closedByPeer()).isTrue();
        }
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            raw.send("GET " + originUrl("/http10") + " HTTP/1.0\r\n\r\n");
            RawHttp.Response response = raw.read();
            assertThat(response.status()).isEqualTo(200);
            assertThat(response.body()).startsWith("ok 0 ");
            assertThat(raw.closedByPeer()).isTrue();
        }
    }
}
