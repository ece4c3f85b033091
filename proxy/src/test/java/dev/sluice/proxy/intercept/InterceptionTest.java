package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.certs.SpkiPin;
import dev.sluice.proxy.cli.SluiceCli;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Interception of inspected hosts, end to end: curl, java.net.http.HttpClient and Node reach a
 * WireMock TLS origin through Sluice trusting only Sluice's CA (using what {@code sluice env} prints);
 * pins, TOFU, SNI and plaintext refusals; blind tunnels stay blind.
 */
class InterceptionTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    @BeforeEach
    void startOrigin() throws IOException {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST, "blind.test"));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"ok\":true}")));
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private String policy(String inspectEntry, Path... extraTrust) {
        StringBuilder trust = new StringBuilder();
        for (Path p : extraTrust) {
            trust.append("\n    - \"").append(p.toAbsolutePath()).append('"');
        }
        return """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                      - host: blind.test
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                    blind.test: 127.0.0.1
                inspect:
                  %1$s: %3$s
                tls:
                  extra_trust:%4$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), inspectEntry, trust);
    }

    private SluiceFixture start(String inspectEntry) throws Exception {
        sluice = SluiceFixture.start(policy(inspectEntry, origin.caPem()));
        return sluice;
    }

    /** Runs {@code sluice env} for the fixture and returns its exports as a map. */
    private Map<String, String> sluiceEnv() {
        StringWriter out = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(new StringWriter()), "env", "--extension",
                "default", "--policy", sluice.dataDir().resolve("policy.yaml").toString(), "--data-dir",
                sluice.dataDir().toString());
        assertThat(code).isZero();
        Map<String, String> env = new HashMap<>();
        Matcher m = Pattern.compile("(?m)^export (\\w+)='([^']*)'$").matcher(out.toString());
        while (m.find()) {
            env.put(m.group(1), m.group(2));
        }
        // The policy names listen 127.0.0.1:0; the running proxy's port is the real one.
        String proxy = "http://127.0.0.1:" + sluice.port();
        for (String k : List.of("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY")) {
            env.put(k, proxy);
        }
        return env;
    }

    private String url(String path) {
        return "https://" + HOST + ":" + origin.httpsPort() + path;
    }

    private JsonNode audited(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> value.equals(r.path(field).asText(null))).reduce((a, b) -> b).orElse(null), r -> r != null);
    }

    private SSLContext trustingOnlySluice() throws Exception {
        return TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"));
    }

    @Test
    void curlHttpClientAndNodeReachTheOriginThroughInterceptionTrustingOnlySluicesCa() throws Exception {
        start("{ pins: tofu }");
        Map<String, String> env = sluiceEnv();
        assertThat(env).containsKeys("NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "NODE_USE_ENV_PROXY");

        // curl with only the variables `sluice env` printed (CURL_CA_BUNDLE: system roots + Sluice's CA).
        CurlResult curl = Curl.run(List.of("-H", "Content-Type: application/json",
                "--data", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", url("/v1/messages?key=secret")),
                Duration.ofSeconds(30), env);
        assertThat(curl.exitCode()).as(curl.stderr()).isZero();
        assertThat(curl.httpStatus()).isEqualTo(200);
        assertThat(curl.body()).isEqualTo("{\"ok\":true}");
        JsonNode record = audited("url.path", "/v1/messages?key=***");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(record.path("http.request.method").asText()).isEqualTo("POST");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(record.path("pin").asText()).isIn("recorded", "ok");

        // java.net.http.HttpClient trusting only Sluice's CA.
        HttpClient client = HttpClient.newBuilder()
                .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                .sslContext(trustingOnlySluice())
                .build();
        HttpResponse<String> response = client.send(HttpRequest.newBuilder(URI.create(url("/v1/java"))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.sslSession().orElseThrow().getPeerCertificates()[0].toString())
                .contains("Sluice local CA");

        // Node with NODE_EXTRA_CA_CERTS from `sluice env`.
        Path script = dir.resolve("node-connect-post.js");
        try (InputStream in = getClass().getResourceAsStream("/node-connect-post.js")) {
            Files.copy(in, script);
        }
        ProcessBuilder node = new ProcessBuilder("node", script.toString(), HOST, String.valueOf(origin.httpsPort()),
                "/v1/node").redirectErrorStream(true);
        node.environment().putAll(env);
        Process p = node.start();
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        String nodeOut = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(nodeOut).isEqualTo("200 {\"ok\":true}");
        assertThat(audited("url.path", "/v1/node").path("tls.mode").asText()).isEqualTo("intercept");

        // Node's fetch (undici, installed by .ci/run from proxy/src/test/node), proxy and trust from the env.
        Path nodeDir = Path.of("src/test/node").toAbsolutePath();
        if (!Files.isDirectory(nodeDir.resolve("node_modules/undici"))) {
            // The pinned client library (package-lock.json), from the npm registry, once per checkout.
            Process install = new ProcessBuilder("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
                    .directory(nodeDir.toFile()).redirectErrorStream(true).start();
            String log = new String(install.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(install.waitFor(120, TimeUnit.SECONDS)).isTrue();
            assertThat(install.exitValue()).as("npm ci: " + log).isZero();
        }
        assertThat(nodeDir.resolve("node_modules/undici")).isDirectory();
        ProcessBuilder fetch = new ProcessBuilder("node", nodeDir.resolve("fetch-through-proxy.js").toString(),
                url("/v1/fetch")).redirectError(ProcessBuilder.Redirect.DISCARD).directory(nodeDir.toFile());
        fetch.environment().putAll(env);
        Process f = fetch.start();
        assertThat(f.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(new String(f.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim())
                .isEqualTo("200 {\"ok\":true}");
        assertThat(audited("url.path", "/v1/fetch").path("http.request.method").asText()).isEqualTo("POST");
    }

    @Test
    void theRightPinPassesAndAWrongPinIs502WithAnAuditLine() throws Exception {
        String right = SpkiPin.of(origin.tls().caCertificate());
        start("{ pins: [\"" + right + "\"] }");
        Map<String, String> env = sluiceEnv();
        assertThat(Curl.run(List.of(url("/right")), Duration.ofSeconds(30), env).httpStatus()).isEqualTo(200);
        assertThat(audited("url.path", "/right").path("pin").asText()).isEqualTo("ok");
        sluice.close();

        String wrong = "sha256/" + java.util.Base64.getEncoder().encodeToString(new byte[32]);
        start("{ pins: [\"" + wrong + "\"] }");
        env = sluiceEnv();
        CurlResult refused = Curl.run(List.of(url("/wrong")), Duration.ofSeconds(30), env);
        assertThat(refused.httpStatus()).isEqualTo(502);
        assertThat(refused.body()).isEqualTo("sluice: pin_mismatch\n");
        JsonNode record = audited("url.path", "/wrong");
        assertThat(record.path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(origin.server().findAll(com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor(
                com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo("/wrong")))).isEmpty();
    }

    @Test
    void pinReportModeLogsTheMismatchAndLetsTheRequestThrough() throws Exception {
        String wrong = "sha256/" + java.util.Base64.getEncoder().encodeToString(new byte[32]);
        start("{ pins: [\"" + wrong + "\"], pin_mode: report }");
        CurlResult result = Curl.run(List.of(url("/report")), Duration.ofSeconds(30), sluiceEnv());
        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(audited("url.path", "/report").path("pin").asText()).isEqualTo("mismatch");
    }

    @Test
    void tofuRecordsTheFirstChainAndRefusesAnotherCa() throws Exception {
        start("{ pins: tofu }");
        Map<String, String> env = sluiceEnv();
        assertThat(Curl.run(List.of(url("/first")), Duration.ofSeconds(30), env).httpStatus()).isEqualTo(200);
        assertThat(audited("url.path", "/first").path("pin").asText()).isEqualTo("recorded");
        assertThat(sluice.dataDir().resolve("pins")).isNotEmptyDirectory();
        Path dataDir = sluice.dataDir();

        // The same name, now served with a certificate from another (also trusted) CA.
        origin.close();
        TestTls other = TestTls.create(dir.resolve("other-tls"), HOST, "blind.test");
        origin = Origins.start(other);
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("{\"ok\":true}")));
        // A new Sluice on the same data dir (same CA and pins) that trusts both CAs.
        sluice.stop();
        Path policyFile = dataDir.resolve("policy.yaml");
        Files.writeString(policyFile, policy("{ pins: tofu }", dir.resolve("origin-tls").resolve("ca.pem"), other.caPem()));
        sluice = SluiceFixture.restart(dataDir);
        env = sluiceEnv();
        CurlResult refused = Curl.run(List.of(url("/second")), Duration.ofSeconds(30), env);
        assertThat(refused.httpStatus()).isEqualTo(502);
        assertThat(refused.body()).isEqualTo("sluice: pin_mismatch\n");
        assertThat(audited("url.path", "/second").path("reason").asText()).isEqualTo("pin_mismatch");
    }

    private Socket connectTunnel(String target) throws IOException {
        Socket socket = new Socket("127.0.0.1", sluice.port());
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

    @Test
    void anSniOtherThanTheConnectHostIsClosedAndAudited() throws Exception {
        start("{}");
        try (Socket tunnel = connectTunnel(HOST + ":" + origin.httpsPort())) {
            SSLSocket tls = (SSLSocket) trustingOnlySluice().getSocketFactory().createSocket(tunnel, "evil.test",
                    origin.httpsPort(), true);
            SSLParameters params = tls.getSSLParameters();
            params.setServerNames(List.of(new SNIHostName("evil.test")));
            tls.setSSLParameters(params);
            org.assertj.core.api.Assertions.assertThatThrownBy(tls::startHandshake).isInstanceOf(IOException.class);
        }
        JsonNode record = audited("reason", "sni_mismatch");
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("tls.sni").asText()).isEqualTo("evil.test");
    }

    @Test
    void plaintextInATunnelToAnInspectedHostIsRefused() throws Exception {
        start("{}");
        try (Socket tunnel = connectTunnel(HOST + ":" + origin.httpsPort())) {
            OutputStream out = tunnel.getOutputStream();
            out.write(("GET /plain HTTP/1.1\r\nHost: " + HOST + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(tunnel.getInputStream().read()).isEqualTo(-1);
        }
        assertThat(audited("reason", "not_http_or_tls").path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }

    /**
     * A client that sends its CONNECT, a few bytes and its FIN at once: the tunnel cannot become an
     * intercepted one (no TLS handshake can follow a FIN), and it must never become a blind one either.
     * The origin here is a raw TCP server that counts every byte it receives.
     */
    @Test
    void aTunnelToAnInspectedHostThatCannotBeInterceptedIsRefusedNeverRelayedBlind() throws Exception {
        try (java.net.ServerSocket raw = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            java.io.ByteArrayOutputStream received = new java.io.ByteArrayOutputStream();
            java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
            Thread acceptor = new Thread(() -> {
                while (!raw.isClosed()) {
                    try (Socket s = raw.accept()) {
                        accepted.incrementAndGet();
                        s.setSoTimeout(5_000);
                        byte[] buf = new byte[4096];
                        for (int n; (n = s.getInputStream().read(buf)) > 0; ) {
                            synchronized (received) {
                                received.write(buf, 0, n);
                            }
                        }
                    } catch (IOException e) {
                        // closed by the test, or a read timeout
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            sluice = SluiceFixture.start(policy("{}", origin.caPem()).replace(
                    "ports: [" + origin.httpsPort() + "]", "ports: [" + raw.getLocalPort() + "]"));
            String target = HOST + ":" + raw.getLocalPort();
            int attempts = 20;
            for (int i = 0; i < attempts; i++) {
                try (Socket socket = new Socket("127.0.0.1", sluice.port())) {
                    socket.setSoTimeout(10_000);
                    socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target
                            + "\r\n\r\nGET /secret HTTP/1.1\r\nHost: " + HOST + "\r\n\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
                    socket.shutdownOutput();
                    socket.getInputStream().readAllBytes();
                }
            }
            List<JsonNode> records = await().atMost(Duration.ofSeconds(10)).until(
                    () -> sluice.audit().stream().filter(r -> r.path("http.request.method").asText().equals("CONNECT"))
                            .toList(), r -> r.size() == attempts);
            for (JsonNode r : records) {
                assertThat(r.path("decision").asText()).as(r.toString()).isEqualTo("deny");
                assertThat(r.path("reason").asText()).as(r.toString())
                        .isIn("interception_unavailable", "not_http_or_tls");
                assertThat(r.path("tls.mode").asText()).as(r.toString()).isNotEqualTo("tunnel");
            }
            // Nothing of the client's reached the origin: a blind relay would have passed the GET on. (An
            // interception that started before the FIN was read may have sent Sluice's own upstream
            // ClientHello, which carries no byte of the client's.)
            synchronized (received) {
                assertThat(received.toString(StandardCharsets.ISO_8859_1)).doesNotContain("/secret");
            }
        }
    }

    @Test
    void aHostHeaderForAnotherHostGets421() throws Exception {
        start("{}");
        CurlResult result = Curl.run(List.of("-H", "Host: other.test", url("/misdirected")), Duration.ofSeconds(30),
                sluiceEnv());
        assertThat(result.httpStatus()).isEqualTo(421);
        assertThat(result.body()).isEqualTo("sluice: host_mismatch\n");
    }

    @Test
    void aBlindTunnelToANonInspectedHostIsNeverTerminated() throws Exception {
        start("{}");
        // Trusting only the origin's own CA: this works only if Sluice does not terminate TLS.
        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert", origin.caPem().toString(),
                "https://blind.test:" + origin.httpsPort() + "/blind"));
        assertThat(result.exitCode()).as(result.stderr()).isZero();
        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(audited("server.address", "blind.test").path("tls.mode").asText()).isEqualTo("tunnel");
    }
}
