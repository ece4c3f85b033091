package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.SteppedSseOrigin;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTP/2 on an intercepted host, over real sockets: curl {@code --http2} and Node's built-in
 * {@code http2} module (ALPN h2 only) through a CONNECT tunnel to a WireMock TLS origin (HTTP/1.1) on
 * loopback (and, for SSE, a {@link SteppedSseOrigin} that sends each event only once the one before was
 * read). Each stream is decided, redacted, forwarded and audited as an HTTP/1.1 request; a denied
 * stream is 403 while another stream of the same connection succeeds; SSE arrives event by event; a
 * header list over {@code limits.max_header_bytes} is 431; a rapid-reset flood gets GOAWAY while a
 * new connection keeps working.
 */
class H2InterceptionTest {

    /** How long the origin holds each answer of the concurrent-streams test, in ms. */
    private static final int SLOW_MS = 600;

    static final String HOST = "api.llm.test";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private Origins origin;
    /** The origin of the SSE test, with the same certificate as {@link #origin}. */
    private SteppedSseOrigin sse;
    private SluiceFixture sluice;

    @BeforeEach
    void start() throws Exception {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("{\"ok\":true}")));
        List<String> events = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            events.add("data: {\"delta\":\"part " + i + "\"}\n\n");
        }
        sse = SteppedSseOrigin.start(origin.tls(), events);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d, %4$d]
                        paths: ["/ok/**"]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { redact: true, pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                limits:
                  max_header_bytes: 8192
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), origin.caPem().toAbsolutePath(), sse.port()));
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        sse.close();
        origin.close();
    }

    private String url(String path) {
        return "https://" + HOST + ":" + origin.httpsPort() + path;
    }

    private String ca() {
        return sluice.dataDir().resolve("ca.crt.pem").toString();
    }

    /** Runs curl through Sluice; returns stdout and stderr (-v trace) joined by a line "----". */
    private String curl(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("curl", "-q", "-sS", "-v", "--http2", "-x", sluice.proxyUrl(),
                "--cacert", ca()));
        command.addAll(List.of(args));
        Path out = dir.resolve("curl-out.txt");
        Path err = dir.resolve("curl-err.txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        dev.sluice.proxy.testing.Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return Files.readString(out) + "\n----\n" + Files.readString(err);
    }

    private List<JsonNode> records(Predicate<JsonNode> which) {
        return sluice.audit().stream().filter(which).toList();
    }

    private static Predicate<JsonNode> path(String p) {
        return r -> p.equals(r.path("url.path").asText(null));
    }

    private JsonNode one(Predicate<JsonNode> which) {
        await().atMost(Duration.ofSeconds(10)).until(() -> !records(which).isEmpty());
        List<JsonNode> found = records(which);
        assertThat(found).hasSize(1);
        return found.get(0);
    }

    @Test
    void curlHttp2GetsItsStreamsDecidedOneByOneOnOneConnectionWithOneRecordEach() throws Exception {
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", url("/ok/first"), url("/secret"),
                url("/ok/third"));
        assertThat(out).contains("ALPN: server accepted h2")
                .contains("[2 200]").contains("[2 403]")
                .contains("sluice: ")
                .contains("Re-using existing connection");
        assertThat(out.indexOf("[2 200]")).isLessThan(out.indexOf("[2 403]"));
        assertThat(out.lastIndexOf("[2 200]")).isGreaterThan(out.indexOf("[2 403]"));
        JsonNode first = one(path("/ok/first"));
        assertThat(first.path("decision").asText()).isEqualTo("allow");
        assertThat(first.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(first.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(first.path("pin").asText()).isNotEmpty();
        JsonNode denied = one(path("/secret"));
        assertThat(denied.path("decision").asText()).isEqualTo("deny");
        assertThat(denied.path("http.response.status_code").asInt()).isEqualTo(403);
        assertThat(one(path("/ok/third")).path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(origin.server().getAllServeEvents()).hasSize(2);
        // One tunnel (one CONNECT record) carried the three streams.
        await().atMost(Duration.ofSeconds(10)).until(() -> !records(r -> "CONNECT".equals(
                r.path("http.request.method").asText(null))).isEmpty());
        assertThat(records(r -> "CONNECT".equals(r.path("http.request.method").asText(null)))).hasSize(1);
    }

    @Test
    void aCredentialInAnH2RequestBodyReachesTheOriginRedacted() throws Exception {
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
        List<LoggedRequest> seen = origin.server().findAll(postRequestedFor(urlEqualTo("/ok/v1/messages")));
        assertThat(seen).hasSize(1);
        assertThat(seen.get(0).getBodyAsString()).doesNotContain(key).contains("[REDACTED:anthropic-api-key]");
        JsonNode record = one(path("/ok/v1/messages"));
        assertThat(record.path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
        assertThat(sluice.audit().toString()).doesNotContain(key);
    }

    @Test
    void anSseAnswerArrivesEventByEventOnAnH2Stream() throws Exception {
        // The origin sends each next event only once curl has read the one before: a proxy that held the
        // answer back would leave curl waiting (its --max-time only guards a hang).
        ProcessBuilder builder = new ProcessBuilder("curl", "-q", "-sS", "-N", "--http2", "--max-time", "60",
                "-x", sluice.proxyUrl(), "--cacert", ca(), "https://" + HOST + ":" + sse.port() + "/ok/sse")
                .redirectError(ProcessBuilder.Redirect.DISCARD);
        dev.sluice.proxy.testing.Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        List<String> received = new ArrayList<>();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                if (line.startsWith("data:")) {
                    received.add(line);
                    assertThat(sse.sent()).as("event %d reached the client before the origin sent the next",
                            received.size()).isEqualTo(received.size());
                    if (received.size() < 5) {
                        sse.next();
                    }
                }
            }
        }
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(sse.gaveUp()).as("the origin waited in vain for curl to read an event").isFalse();
        assertThat(received).as("each event relayed as it came").containsExactly("data: {\"delta\":\"part 0\"}",
                "data: {\"delta\":\"part 1\"}", "data: {\"delta\":\"part 2\"}", "data: {\"delta\":\"part 3\"}",
                "data: {\"delta\":\"part 4\"}");
        assertThat(sse.requests()).containsExactly("/ok/sse");
        assertThat(one(path("/ok/sse")).path("http.response.status_code").asInt()).isEqualTo(200);
    }

    @Test
    void aGracefulShutdownLetsTheStreamInFlightFinish() throws Exception {
        StringBuilder events = new StringBuilder();
        for (int i = 0; i < 5; i++) {
            events.append("data: {\"delta\":\"part ").append(i).append("\"}\n\n");
        }
        origin.server().stubFor(get(urlEqualTo("/ok/drain")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "text/event-stream")
                .withBody(events.toString()).withChunkedDribbleDelay(5, 1500)));
        ProcessBuilder builder = new ProcessBuilder("curl", "-q", "-sS", "-N", "--http2", "-x", sluice.proxyUrl(),
                "--cacert", ca(), url("/ok/drain")).redirectError(ProcessBuilder.Redirect.DISCARD);
        dev.sluice.proxy.testing.Curl.PROXY_VARIABLES.forEach(builder.environment()::remove);
        Process p = builder.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> !origin.server().getAllServeEvents().isEmpty());
        Thread stopper = new Thread(() -> sluice.stop(Duration.ofSeconds(10)));
        stopper.start();
        String body = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        stopper.join(15_000);
        assertThat(p.exitValue()).isZero();
        assertThat(body).contains("part 0").contains("part 4");
    }

    @Test
    void aHeaderListOverMaxHeaderBytesGets431AndItsRecord() throws Exception {
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", "-H", "x-big: " + "b".repeat(9000),
                url("/ok/big-headers"));
        assertThat(out).contains("[2 431]");
        JsonNode record = one(r -> "header_too_large".equals(r.path("reason").asText(null)));
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(431);
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("extension").asText()).isEqualTo("default");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }

    @Test
    void nodeHttp2OfferingOnlyH2RunsConcurrentStreamsThroughTheTunnel() throws Exception {
        origin.server().stubFor(get(urlPathMatching("/ok/slow/.*")).willReturn(aResponse().withStatus(200)
                .withBody("slow").withFixedDelay(SLOW_MS)));
        Path script = Path.of("src/test/node/h2-through-proxy.js").toAbsolutePath();
        ProcessBuilder builder = new ProcessBuilder("node", script.toString(), "127.0.0.1",
                String.valueOf(sluice.port()), HOST, String.valueOf(origin.httpsPort()), ca(),
                "/ok/slow/1", "/ok/slow/2", "/ok/slow/3", "/ok/slow/4", "/ok/slow/5", "/denied")
                .redirectErrorStream(true);
        Process p = builder.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(output).isZero();
        JsonNode result = JSON.readTree(output.lines().reduce((a, b) -> b).orElseThrow());
        assertThat(result.path("alpn").asText()).isEqualTo("h2");
        for (int i = 0; i < 5; i++) {
            assertThat(result.path("results").get(i).path("status").asInt()).isEqualTo(200);
            assertThat(result.path("results").get(i).path("body").asText()).isEqualTo("slow");
        }
        assertThat(result.path("results").get(5).path("status").asInt()).isEqualTo(403);
        // The origin holds each answer SLOW_MS: had the streams run one after another, each request would
        // reach it at least SLOW_MS after the one before. All five arrived before the first answer could
        // leave, so they ran at the same time (Node's start-up and the handshakes are not measured).
        List<Long> arrivals = origin.server().findAll(getRequestedFor(urlPathMatching("/ok/slow/.*"))).stream()
                .map(r -> r.getLoggedDate().getTime()).sorted().toList();
        assertThat(arrivals).hasSize(5);
        assertThat(arrivals.get(4) - arrivals.get(0)).as("arrival spread, ms").isLessThan(SLOW_MS);
        for (int i = 1; i <= 5; i++) {
            assertThat(one(path("/ok/slow/" + i)).path("http.response.status_code").asInt()).isEqualTo(200);
        }
        assertThat(one(path("/denied")).path("decision").asText()).isEqualTo("deny");
    }

    @Test
    void anHttp11OnlyClientStillGetsHttp11() throws Exception {
        String out = curl("--http1.1", "-w", "[%{http_version} %{http_code}]\\n", url("/ok/h1"));
        assertThat(out).contains("ALPN: server accepted http/1.1").contains("[1.1 200]");
        assertThat(one(path("/ok/h1")).path("http.response.status_code").asInt()).isEqualTo(200);
    }

    @Test
    void aRapidResetFloodEndsItsConnectionWithGoawayWhileANewConnectionWorks() throws Exception {
        try (Socket tunnel = connectTunnel(); SSLSocket tls = h2Over(tunnel)) {
            OutputStream out = tls.getOutputStream();
            out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(frame(0x4, 0, 0, new byte[0])); // SETTINGS
            byte[] authority = (HOST + ":" + origin.httpsPort()).getBytes(StandardCharsets.US_ASCII);
            ByteBuffer block = ByteBuffer.allocate(64 + authority.length);
            // HPACK (RFC 7541): :method GET (2), :scheme https (7), :path "/ok/flood" literal without
            // indexing (name 4), :authority literal without indexing (name 1).
            block.put((byte) 0x82).put((byte) 0x87).put((byte) 0x04).put((byte) 9)
                    .put("/ok/flood".getBytes(StandardCharsets.US_ASCII));
            block.put((byte) 0x01).put((byte) authority.length).put(authority);
            byte[] headers = java.util.Arrays.copyOf(block.array(), block.position());
            for (int stream = 1; stream < 2 * 400; stream += 2) {
                out.write(frame(0x1, 0x5, stream, headers)); // HEADERS, END_STREAM | END_HEADERS
                out.write(frame(0x3, 0, stream, new byte[] {0, 0, 0, 8})); // RST_STREAM CANCEL
            }
            out.flush();
            long goAwayError = readUntilGoAway(new DataInputStream(tls.getInputStream()));
            assertThat(goAwayError).isEqualTo(0xb); // ENHANCE_YOUR_CALM
        } catch (java.net.SocketException closedWhileWriting) {
            // The server may close before all frames are written; the record below still says why.
        }
        JsonNode tunnel = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("error").asText("").contains("h2 connection error")).findFirst().orElse(null),
                r -> r != null);
        assertThat(tunnel.path("error").asText()).contains("ENHANCE_YOUR_CALM");
        String out = curl("-w", "[%{http_version} %{http_code}]\\n", url("/ok/after-flood"));
        assertThat(out).contains("[2 200]");
    }

    private Socket connectTunnel() throws IOException {
        return connectTunnel(sluice, origin.httpsPort());
    }

    /** Opens a CONNECT tunnel through {@code sluice} to {@value #HOST}:{@code port}; the 200 is read. */
    static Socket connectTunnel(SluiceFixture sluice, int port) throws IOException {
        return connectTunnel(sluice, port, 0);
    }

    /** As {@link #connectTunnel(SluiceFixture, int)}, with SO_RCVBUF {@code receiveBuffer} bytes (0: default). */
    static Socket connectTunnel(SluiceFixture sluice, int port, int receiveBuffer) throws IOException {
        String target = HOST + ":" + port;
        Socket socket = new Socket();
        if (receiveBuffer > 0) {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        socket.connect(new java.net.InetSocketAddress("127.0.0.1", sluice.port()), 10_000);
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            head.append((char) in.read());
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 200");
        return socket;
    }

    private SSLSocket h2Over(Socket tunnel) throws Exception {
        return h2Over(sluice, tunnel, origin.httpsPort());
    }

    /** TLS over a tunnel to Sluice's interception, ALPN {@code h2} only (asserted chosen). */
    static SSLSocket h2Over(SluiceFixture sluice, Socket tunnel, int port) throws Exception {
        SSLSocket tls = (SSLSocket) TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")).getSocketFactory()
                .createSocket(tunnel, HOST, port, true);
        SSLParameters params = tls.getSSLParameters();
        params.setApplicationProtocols(new String[] {"h2"});
        tls.setSSLParameters(params);
        tls.startHandshake();
        assertThat(tls.getApplicationProtocol()).isEqualTo("h2");
        return tls;
    }

    /** An HTTP/2 frame (RFC 9113 section 4.1). */
    static byte[] frame(int type, int flags, int stream, byte[] payload) {
        ByteBuffer b = ByteBuffer.allocate(9 + payload.length);
        b.put((byte) (payload.length >>> 16)).put((byte) (payload.length >>> 8)).put((byte) payload.length);
        b.put((byte) type).put((byte) flags).putInt(stream).put(payload);
        return b.array();
    }

    /** Reads frames until a GOAWAY; returns its error code. */
    static long readUntilGoAway(DataInputStream in) throws IOException {
        while (true) {
            int length;
            try {
                length = (in.readUnsignedByte() << 16) | in.readUnsignedShort();
            } catch (EOFException e) {
                throw new AssertionError("connection closed without GOAWAY", e);
            }
            int type = in.readUnsignedByte();
            in.readUnsignedByte();
            in.readInt();
            byte[] payload = in.readNBytes(length);
            if (type == 0x7) {
                return ByteBuffer.wrap(payload, 4, 4).getInt() & 0xffffffffL;
            }
        }
    }
}
