package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.H2Origin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import dev.sluice.proxy.tls.InterceptionTls;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The upstream leg of an intercepted HTTP/2 client speaks what the origin offers: here an h2-only
 * Netty TLS origin on loopback ({@link H2Origin}, whose handshake fails for a client that does not
 * offer h2), behind an inspected host. curl {@code --http2} and Java's HttpClient through Sluice:
 * requests answered, streams of one client connection multiplexed on one upstream connection, an SSE
 * answer event by event, a redacted request body reaching the origin redacted, one record per stream
 * (the origin speaks nothing but h2), and the pin check on the h2 upstream (a wrong pin is 502
 * {@code pin_mismatch}). HTTP/1.1 origins are covered by {@code H2InterceptionTest} and
 * {@code H2UpstreamReuseTest}.
 */
class H2UpstreamTest {

    private static final String HOST = "api.llm.test";
    private static final String WRONG_PIN = "sha256/" + Base64.getEncoder().encodeToString(new byte[32]);

    @TempDir
    Path dir;
    private H2Origin origin;
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

    private void start(String inspect) throws Exception {
        start(inspect, null);
    }

    /** Starts the origin and Sluice, with the TLS provider {@code provider} ({@code openssl}, {@code jdk}, null: auto). */
    private void start(String inspect, String provider) throws Exception {
        String before = System.getProperty(InterceptionTls.PROVIDER_PROPERTY);
        if (provider != null) {
            System.setProperty(InterceptionTls.PROVIDER_PROPERTY, provider);
        }
        try {
            startWithProperty(inspect);
        } finally {
            if (before == null) {
                System.clearProperty(InterceptionTls.PROVIDER_PROPERTY);
            } else {
                System.setProperty(InterceptionTls.PROVIDER_PROPERTY, before);
            }
        }
        if (provider != null) {
            assertThat(sluice.server().interception().provider().name()).isEqualToIgnoringCase(provider);
        }
    }

    private void startWithProperty(String inspect) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = H2Origin.start(tls);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                        paths: ["/ok/**"]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: %4$s
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath(), inspect));
    }

    private String url(String path) {
        return "https://" + HOST + ":" + origin.port() + path;
    }

    private String curl(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("curl", "-q", "-sS", "-v", "--http2", "-x", sluice.proxyUrl(),
                "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString()));
        command.addAll(List.of(args));
        Path out = dir.resolve("curl-out.txt");
        Path err = dir.resolve("curl-err.txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        dev.sluice.proxy.testing.Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return Files.readString(out) + "\n----\n" + Files.readString(err);
    }

    private JsonNode one(Predicate<JsonNode> which) {
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream().anyMatch(which));
        List<JsonNode> found = sluice.audit().stream().filter(which).toList();
        assertThat(found).hasSize(1);
        return found.get(0);
    }

    private static Predicate<JsonNode> path(String p) {
        return r -> p.equals(r.path("url.path").asText(null));
    }

    @Test
    void curlHttp2StreamsReachAnH2OnlyOriginOnOneUpstreamConnection() throws Exception {
        start("{ redact: true, pins: tofu }");
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", url("/ok/first"), url("/secret"),
                url("/ok/third"));
        assertThat(out).contains("ALPN: server accepted h2").contains("[2 403]");
        assertThat(out.split("\\[2 200]", -1)).hasSize(3);
        assertThat(origin.requests()).extracting(H2Origin.Seen::path).containsExactly("/ok/first", "/ok/third");
        assertThat(origin.requests()).extracting(H2Origin.Seen::scheme).containsOnly("https");
        assertThat(origin.connections()).isEqualTo(1);
        JsonNode first = one(path("/ok/first"));
        assertThat(first.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(first.path("pin").asText()).isIn("recorded", "ok");
        assertThat(first.path("upstream.protocol").asText()).isEqualTo("h2");
        assertThat(first.path("bytes.received").asLong()).isGreaterThanOrEqualTo("{\"ok\":true}".length());
        JsonNode third = one(path("/ok/third"));
        assertThat(third.path("pin").asText()).isIn("recorded", "ok");
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void javaHttpClientConcurrentStreamsAreMultiplexedOnOneH2UpstreamConnection(String provider) throws Exception {
        start("{ redact: true, pins: tofu }", provider);
        InetSocketAddress proxy = new InetSocketAddress("127.0.0.1", URI.create(sluice.proxyUrl()).getPort());
        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_2)
                .proxy(ProxySelector.of(proxy))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        // One request first, so the others find the connection (HttpClient then opens its streams on it).
        HttpResponse<String> warm = client.send(HttpRequest.newBuilder(URI.create(url("/ok/warm"))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(warm.version()).isEqualTo(HttpClient.Version.HTTP_2);
        List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            sent.add(client.sendAsync(HttpRequest.newBuilder(URI.create(url("/ok/n/" + i)))
                    .POST(HttpRequest.BodyPublishers.ofString("{\"n\":" + i + "}")).build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        for (CompletableFuture<HttpResponse<String>> f : sent) {
            HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("{\"ok\":true}");
            assertThat(r.version()).isEqualTo(HttpClient.Version.HTTP_2);
        }
        assertThat(origin.requests()).hasSize(9);
        assertThat(origin.connections()).as("one upstream connection for the client's one connection").isEqualTo(1);
        for (int i = 0; i < 8; i++) {
            JsonNode record = one(path("/ok/n/" + i));
            assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
            assertThat(record.path("upstream.protocol").asText()).isEqualTo("h2");
        }
    }

    @Test
    void nodeHttp2StreamsSentAtOnceWaitForTheFirstHandshakeAndShareItsConnection() throws Exception {
        // All streams arrive before the upstream handshake of the CONNECT's connection has ended: they
        // wait for it instead of dialling, then become streams of that one connection.
        start("{ redact: true, pins: tofu }");
        Path script = Path.of("src/test/node/h2-through-proxy.js").toAbsolutePath();
        ProcessBuilder builder = new ProcessBuilder("node", script.toString(), "127.0.0.1",
                String.valueOf(sluice.port()), HOST, String.valueOf(origin.port()),
                sluice.dataDir().resolve("ca.crt.pem").toString(),
                "/ok/1", "/ok/2", "/ok/3", "/ok/4", "/ok/5", "/denied").redirectErrorStream(true);
        Process p = builder.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(output).isZero();
        JsonNode result = new com.fasterxml.jackson.databind.ObjectMapper()
                .readTree(output.lines().reduce((x, y) -> y).orElseThrow());
        assertThat(result.path("alpn").asText()).isEqualTo("h2");
        for (int i = 0; i < 5; i++) {
            assertThat(result.path("results").get(i).path("status").asInt()).as(output).isEqualTo(200);
            assertThat(result.path("results").get(i).path("body").asText()).isEqualTo("{\"ok\":true}");
        }
        assertThat(result.path("results").get(5).path("status").asInt()).isEqualTo(403);
        assertThat(origin.requests()).hasSize(5);
        assertThat(origin.connections()).as("one upstream connection for six streams sent at once").isEqualTo(1);
        for (int i = 1; i <= 5; i++) {
            assertThat(one(path("/ok/" + i)).path("upstream.protocol").asText()).isEqualTo("h2");
        }
    }

    @Test
    void anSseAnswerFromAnH2OriginArrivesEventByEvent() throws Exception {
        start("{ redact: true, pins: tofu }");
        // The origin sends each next event only once the client has read the one before: a proxy that
        // held the answer back would leave curl waiting (its --max-time only guards a hang).
        ProcessBuilder builder = new ProcessBuilder("curl", "-q", "-sS", "-N", "--http2", "--max-time", "30",
                "-x", sluice.proxyUrl(), "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                url("/ok/sse"))
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        dev.sluice.proxy.testing.Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        List<String> events = new ArrayList<>();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                if (line.startsWith("data:")) {
                    events.add(line);
                    if (events.size() < H2Origin.SSE_EVENTS) {
                        origin.nextSseEvent();
                    }
                }
            }
        }
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(events).as("each event relayed before the origin sent the next").hasSize(H2Origin.SSE_EVENTS);
        JsonNode record = one(path("/ok/sse"));
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
    }

    @Test
    void aCredentialInTheRequestBodyReachesTheH2OriginRedacted() throws Exception {
        start("{ redact: true, pins: tofu }");
        java.util.Random random = new java.util.Random(14);
        String urlsafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        StringBuilder made = new StringBuilder("sk-ant-").append("api03-");
        for (int i = 0; i < 93; i++) {
            made.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        String key = made.append("AA").toString();
        String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"my key is " + key + "\"}]}";
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", "-H", "content-type: application/json",
                "--data-binary", body, url("/ok/v1/messages"));
        assertThat(out).contains("[2 200]");
        assertThat(origin.requests()).hasSize(1);
        assertThat(origin.requests().get(0).body()).doesNotContain(key).contains("[REDACTED:anthropic-api-key]");
        JsonNode record = one(path("/ok/v1/messages"));
        assertThat(record.path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
        assertThat(record.path("upstream.protocol").asText()).isEqualTo("h2");
    }

    @Test
    void teTrailersOfAnH2RequestReachesTheH2Origin() throws Exception {
        // gRPC sends te: trailers (RFC 9113 section 8.2.2); Sluice strips TE as hop-by-hop, and sends
        // te: trailers again on an h2 upstream stream whose client asked for it.
        start("{ redact: true, pins: tofu }");
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", "-H", "te: trailers", url("/ok/grpc-like"),
                "--next", "-sS", "--http2", "-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-w", "[%{http_version} %{http_code}]\\n",
                url("/ok/plain"));
        assertThat(out.split("\\[2 200]", -1)).as(out).hasSize(3);
        assertThat(origin.requests()).extracting(H2Origin.Seen::path).containsExactly("/ok/grpc-like", "/ok/plain");
        assertThat(origin.requests().get(0).te()).isEqualTo("trailers");
        assertThat(origin.requests().get(1).te()).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aWrongPinOnTheH2UpstreamIs502PinMismatchAndNothingReachesTheOrigin(String provider) throws Exception {
        start("{ redact: true, pins: [\"" + WRONG_PIN + "\"] }", provider);
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", url("/ok/first"), url("/ok/second"));
        assertThat(out).contains("[2 502]").doesNotContain("[2 200]");
        assertThat(origin.requests()).isEmpty();
        JsonNode first = one(path("/ok/first"));
        assertThat(first.path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(first.path("http.response.status_code").asInt()).isEqualTo(502);
        assertThat(one(path("/ok/second")).path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(first.has("upstream.protocol")).as("no upstream leg was set up").isFalse();
    }

    /** An h2 origin's head-only answer (HEADERS ending the stream) that echoes the injected key is scrubbed too. */
    @org.junit.jupiter.api.Test
    void aHeadOnlyH2AnswerEchoingTheInjectedKeyReachesTheClientWithThePlaceholder() throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = H2Origin.start(tls);
        String real = "sk-real-h2-0123456789abcdefghij";
        Path key = java.nio.file.Files.writeString(dir.resolve("key.txt"), real + "\n");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                    credentials: [llm]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                credentials:
                  llm:
                    source: { file: "%4$s" }
                    inject: { hosts: [%1$s], ports: [%2$d], header: authorization }
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath(), key));
        String ph = dev.sluice.proxy.credential.PlaceholderKey.loadOrCreate(sluice.dataDir()).placeholder("default", "llm");
        Path headers = dir.resolve("h2-echo-headers.txt");
        CurlResult r = Curl.run(List.of("--http2", "-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-D", headers.toString(),
                "-H", "Authorization: Bearer " + ph, "https://" + HOST + ":" + origin.port() + "/ok/echo-head"),
                java.time.Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(204);
        assertThat(origin.requests()).anyMatch(seen -> seen.path().equals("/ok/echo-head"));
        String head = java.nio.file.Files.readString(headers);
        assertThat(head).doesNotContain(real).containsIgnoringCase("x-echo: Bearer " + ph);
    }
}
