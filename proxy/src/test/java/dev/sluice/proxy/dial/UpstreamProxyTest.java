package dev.sluice.proxy.dial;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.certs.SpkiPin;
import dev.sluice.proxy.cli.SluiceCli;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.Squid;
import dev.sluice.proxy.testing.TestTls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code upstream_proxy} with a real Squid as the parent (Basic auth through basic_ncsa_auth): blind
 * tunnels, plain HTTP and an inspected host with pins all cross the parent, named by the checked address;
 * {@code no_proxy} goes direct; a 407, a refusal and an unreachable parent are 502 with their own reasons
 * and audit lines, and the parent's password is in none of them; an internal answer is refused before the
 * parent hears of it. Skipped, with the reason, where Squid is not installed.
 */
class UpstreamProxyTest {

    private static final String USER = "sluice-parent";
    private static final String PASSWORD = "pa55-w0rd:with-colon";
    private static final String INSPECTED = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private Squid squid;
    private SluiceFixture sluice;

    @BeforeEach
    void start() throws Exception {
        String why = Squid.unavailable();
        assumeTrue(why == null, () -> "skipped: " + why);
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), INSPECTED, "blind.test"));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "text/plain").withBody("origin says hi")));
        squid = Squid.start(USER, PASSWORD, 9);
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (squid != null) {
            squid.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private Path authFile(String password) throws IOException {
        Path file = dir.resolve("parent-auth-" + password.hashCode());
        Files.writeString(file, USER + ":" + password + "\n");
        return file;
    }

    private SluiceFixture sluice(String upstreamExtra, String password) throws Exception {
        return sluice(upstreamExtra, password, squid.url());
    }

    private SluiceFixture sluice(String upstreamExtra, String password, String parentUrl) throws Exception {
        String pin = SpkiPin.of(origin.tls().caCertificate());
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: blind.test, ports: %7$s }
                      - { host: plain.test, ports: %7$s }
                      - { host: direct.test, ports: %7$s }
                      - { host: %1$s, ports: %7$s }
                      - { host: rebind.test, ports: %7$s }
                      - { host: refused.test, ports: %7$s }
                      - { host: localhost, ports: %7$s }
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    blind.test: 127.0.0.1
                    plain.test: 127.0.0.1
                    direct.test: 127.0.0.1
                    %1$s: 127.0.0.1
                    rebind.test: 10.20.30.40
                    refused.test: 127.0.0.1
                inspect:
                  %1$s: { pins: ["%2$s"] }
                tls:
                  extra_trust: ["%3$s"]
                upstream_proxy:
                  https: %4$s
                  http: %4$s
                  auth_file: "%5$s"
                %6$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(INSPECTED, pin, origin.caPem().toAbsolutePath(), parentUrl,
                authFile(password).toAbsolutePath(), upstreamExtra,
                List.of(origin.httpPort(), origin.httpsPort(), 9, 443)).replace("\n\n", "\n"));
        return sluice;
    }

    private String proxy() {
        return "http://127.0.0.1:" + sluice.port();
    }

    private JsonNode audited(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> value.equals(r.path(field).asText(null))).reduce((a, b) -> b).orElse(null),
                r -> r != null);
    }

    private List<String> squidSaw(String needle) throws IOException {
        return squid.accessLog().stream().filter(l -> l.contains(needle)).toList();
    }

    /** Sends a CONNECT to Sluice over a raw socket and returns its answer's head. */
    private String rawConnect(String authority) throws IOException {
        try (Socket s = new Socket("127.0.0.1", sluice.port())) {
            s.setSoTimeout(15_000);
            s.getOutputStream().write(("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            return head(s.getInputStream());
        }
    }

    static String head(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            out.write(b);
            byte[] sofar = out.toByteArray();
            int n = sofar.length;
            if (n >= 4 && sofar[n - 4] == '\r' && sofar[n - 3] == '\n' && sofar[n - 2] == '\r' && sofar[n - 1] == '\n') {
                break;
            }
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

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
        for (String k : List.of("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY")) {
            env.put(k, proxy());
        }
        return env;
    }

    private void assertNoSecretIn(String text) {
        String basic = Base64.getEncoder().encodeToString((USER + ":" + PASSWORD).getBytes(StandardCharsets.UTF_8));
        assertThat(text).doesNotContain(PASSWORD).doesNotContain(basic);
    }

    @Test
    void aBlindTunnelGoesThroughTheParentNamedByTheCheckedAddress() throws Exception {
        sluice("", PASSWORD);
        CurlResult result = Curl.run(List.of("-x", proxy(), "--cacert", origin.caPem().toString(),
                "https://blind.test:" + origin.httpsPort() + "/blind"));
        assertThat(result.httpStatus()).as(result.stderr()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("origin says hi");
        JsonNode record = audited("tls.mode", "tunnel");
        assertThat(record.path("server.address").asText()).isEqualTo("blind.test");
        assertThat(record.path("network.peer.address").asText()).isEqualTo("127.0.0.1");
        // The parent was asked for the checked address, never the name (it cannot resolve it again).
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT 127.0.0.1:" + origin.httpsPort()).isEmpty());
        assertThat(squidSaw("blind.test")).isEmpty();
        assertThat(squid.accessLog()).anyMatch(l -> l.contains(USER));
        // The counters count the parent connection: the CONNECT with its Proxy-Authorization goes out too.
        assertThat(record.path("bytes.sent").asLong()).isGreaterThan(
                ("CONNECT 127.0.0.1:" + origin.httpsPort() + " HTTP/1.1\r\nProxy-Authorization: Basic ").length());
        assertNoSecretIn(Files.readString(sluice.dataDir().resolve("audit.jsonl")));
    }

    @Test
    void plainHttpGoesThroughTheParentByConnect() throws Exception {
        sluice("", PASSWORD);
        CurlResult result = Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/plain"));
        assertThat(result.httpStatus()).as(result.stderr()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("origin says hi");
        JsonNode record = audited("url.path", "/plain");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT 127.0.0.1:" + origin.httpPort()).isEmpty());
        // The request itself reached the origin with its own Host, not the parent's view of it.
        assertThat(origin.server().getAllServeEvents()).anyMatch(e -> e.getRequest().getUrl().equals("/plain")
                && e.getRequest().getHeader("Host").equals("plain.test:" + origin.httpPort()));
    }

    @Test
    void anInspectedHostIsInterceptedThroughTheParentWithPinsChecked() throws Exception {
        sluice("", PASSWORD);
        CurlResult result = Curl.run(List.of("https://" + INSPECTED + ":" + origin.httpsPort() + "/inspected"),
                Duration.ofSeconds(30), sluiceEnv());
        assertThat(result.httpStatus()).as(result.stderr()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("origin says hi");
        JsonNode record = audited("url.path", "/inspected");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(record.path("pin").asText()).isEqualTo("ok");
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT 127.0.0.1:" + origin.httpsPort()).isEmpty());
    }

    @Test
    void noProxyEntriesGoDirect() throws Exception {
        sluice("  no_proxy: [\"direct.test\", \".nothing.test\", \"127.0.0.9/32\"]", PASSWORD);
        CurlResult direct = Curl.run(List.of("-x", proxy(), "http://direct.test:" + origin.httpPort() + "/direct"));
        assertThat(direct.httpStatus()).as(direct.stderr()).isEqualTo(200);
        CurlResult parent = Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/parent"));
        assertThat(parent.httpStatus()).as(parent.stderr()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> squidSaw("CONNECT 127.0.0.1:" + origin.httpPort()).size() == 1);
        sluice.close();
        // A CIDR entry covers the checked address under connect_by: address; :port narrows an entry.
        sluice("  no_proxy: [\"127.0.0.0/8:" + origin.httpPort() + "\"]", PASSWORD);
        assertThat(Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/cidr")).httpStatus())
                .isEqualTo(200);
        assertThat(Curl.run(List.of("-x", proxy(), "--cacert", origin.caPem().toString(),
                "https://blind.test:" + origin.httpsPort() + "/other-port")).httpStatus()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT 127.0.0.1:" + origin.httpsPort()).isEmpty());
        assertThat(squidSaw("CONNECT 127.0.0.1:" + origin.httpPort())).hasSize(1);
        sluice.close();
        sluice("  no_proxy: [\"*\"]", PASSWORD);
        assertThat(Curl.run(List.of("-x", proxy(), "--cacert", origin.caPem().toString(),
                "https://blind.test:" + origin.httpsPort() + "/star")).httpStatus()).isEqualTo(200);
        assertThat(audited("tls.mode", "tunnel").path("network.peer.address").asText()).isEqualTo("127.0.0.1");
        assertThat(squidSaw("CONNECT 127.0.0.1:" + origin.httpsPort())).hasSize(1);
    }

    @Test
    void aParent407Is502UpstreamProxyAuthWithoutTheCredentialAnywhere() throws Exception {
        sluice("", "wrong-password");
        String answer = rawConnect("blind.test:" + origin.httpsPort());
        assertThat(answer).startsWith("HTTP/1.1 502").contains("X-Sluice-Reason: upstream_proxy_auth");
        JsonNode record = audited("reason", "upstream_proxy_auth");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("outcome").asText()).isEqualTo("upstream_failure");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(502);
        assertThat(record.path("error").asText()).contains("407");
        CurlResult plain = Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/p407"));
        assertThat(plain.httpStatus()).isEqualTo(502);
        assertThat(plain.body()).isEqualTo("sluice: upstream_proxy_auth\n");
        String auditText = Files.readString(sluice.dataDir().resolve("audit.jsonl"));
        assertThat(auditText).doesNotContain("wrong-password")
                .doesNotContain(Base64.getEncoder().encodeToString((USER + ":wrong-password").getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aParentRefusalIs502UpstreamProxyFailedWithItsStatusInTheRecord() throws Exception {
        sluice("", PASSWORD);
        // Squid denies port 9 to authenticated clients (403).
        String answer = rawConnect("refused.test:9");
        assertThat(answer).startsWith("HTTP/1.1 502").contains("X-Sluice-Reason: upstream_proxy_failed");
        JsonNode record = audited("reason", "upstream_proxy_failed");
        assertThat(record.path("error").asText()).contains("403").contains(squid.url());
        assertThat(record.path("rule").asText()).isEqualTo("upstream_proxy");
        assertNoSecretIn(Files.readString(sluice.dataDir().resolve("audit.jsonl")));
    }

    @Test
    void anUnreachableParentIs502UpstreamProxyFailed() throws Exception {
        String deadParent = "http://127.0.0.1:" + SluiceFixture.freePort();
        sluice("", PASSWORD, deadParent);
        CurlResult plain = Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/dead"));
        assertThat(plain.httpStatus()).isEqualTo(502);
        assertThat(plain.body()).isEqualTo("sluice: upstream_proxy_failed\n");
        JsonNode record = audited("url.path", "/dead");
        assertThat(record.path("reason").asText()).isEqualTo("upstream_proxy_failed");
        assertThat(record.path("error").asText()).contains(deadParent).contains("unreachable");
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }

    @Test
    void anInternalAnswerIsRefusedBeforeTheParentHearsOfIt() throws Exception {
        // rebind.test is allowed by name but answers 10.20.30.40: under connect_by: address Sluice
        // checks the answer first, and the parent is only ever asked for checked addresses.
        sluice("  connect_by: address", PASSWORD);
        String answer = rawConnect("rebind.test:443");
        assertThat(answer).startsWith("HTTP/1.1 403").contains("X-Sluice-Reason: address_class");
        assertThat(audited("server.address", "rebind.test").path("reason").asText()).isEqualTo("address_class");
        CurlResult ok = Curl.run(List.of("-x", proxy(), "http://plain.test:" + origin.httpPort() + "/after"));
        assertThat(ok.httpStatus()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT 127.0.0.1:" + origin.httpPort()).isEmpty());
        assertThat(squid.accessLog()).noneMatch(l -> l.contains("rebind.test") || l.contains("10.20.30.40"));
    }

    @Test
    void connectByHostnameSendsTheNameAndTheParentResolvesIt() throws Exception {
        // localhost is in no network.hosts entry: Sluice does not resolve it, Squid does (/etc/hosts).
        sluice("  connect_by: hostname", PASSWORD);
        CurlResult result = Curl.run(List.of("-x", proxy(), "http://localhost:" + origin.httpPort() + "/by-name"));
        assertThat(result.httpStatus()).as(result.stderr()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> !squidSaw("CONNECT localhost:" + origin.httpPort()).isEmpty());
        // The record names the parent as the peer: Sluice never saw the origin's address.
        assertThat(audited("url.path", "/by-name").path("network.peer.address").asText()).isEqualTo("127.0.0.1");
    }
}
