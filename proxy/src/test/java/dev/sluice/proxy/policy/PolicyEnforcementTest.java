package dev.sluice.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.server.PolicyReloader;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The complete policy, enforced by a real Sluice over real sockets: identities, deny rules, methods and
 * paths, report mode, and hot reload that fails closed.
 */
class PolicyEnforcementTest {

    private static final String TOKEN_A = "token-of-extension-a";
    private static final String TOKEN_B = "token-of-extension-b";

    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @BeforeEach
    void startOrigin() throws Exception {
        origin = new RecordingOrigin();
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private static String sha(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private String policy(String mode, String extraRulesForA) {
        int p = origin.port();
        return """
                version: 1
                mode: %1$s
                extensions:
                  a:
                    auth: { token_sha256: "%2$s" }
                    allow:
                      - host: "*.a.test"
                        ports: [%4$d]
                      - host: api.shared.test
                        ports: [%4$d]
                        methods: [GET]
                        paths: ["/api/**"]
                %5$s
                    deny:
                      - host: secret.a.test
                  b:
                    auth: { token_sha256: "%3$s" }
                    allow:
                      - host: origin.b.test
                        ports: [%4$d]
                deny:
                  - host: globally-blocked.a.test
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.a.test: 127.0.0.1
                    secret.a.test: 127.0.0.1
                    globally-blocked.a.test: 127.0.0.1
                    origin.b.test: 127.0.0.1
                    api.shared.test: 127.0.0.1
                    unlisted.test: 127.0.0.1
                    metadata.a.test: 169.254.169.254
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(mode, sha(TOKEN_A), sha(TOKEN_B), p, extraRulesForA);
    }

    private CurlResult as(String extension, String token, String url, String... extra) {
        List<String> args = new java.util.ArrayList<>(List.of("-x",
                "http://" + extension + ":" + token + "@127.0.0.1:" + sluice.port()));
        args.addAll(List.of(extra));
        args.add(url);
        return Curl.run(args);
    }

    private String url(String host, String path) {
        return "http://" + host + ":" + origin.port() + path;
    }

    private JsonNode audited(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText())).reduce((x, y) -> y).orElse(null), r -> r != null);
    }

    @Test
    void eachTokenReachesItsOwnAllowlistAndNotAnothers() throws Exception {
        sluice = SluiceFixture.start(policy("enforce", ""));
        assertThat(as("a", TOKEN_A, url("origin.a.test", "/a-own")).httpStatus()).isEqualTo(200);
        assertThat(as("b", TOKEN_B, url("origin.b.test", "/b-own")).httpStatus()).isEqualTo(200);
        CurlResult cross = as("a", TOKEN_A, url("origin.b.test", "/a-to-b"));
        assertThat(cross.httpStatus()).isEqualTo(403);
        assertThat(cross.body()).isEqualTo("sluice: not_allowlisted\n");
        // A's name with B's token is not A.
        assertThat(as("a", TOKEN_B, url("origin.a.test", "/a-with-b-token")).httpStatus()).isEqualTo(407);
        assertThat(audited("/a-own").path("extension").asText()).isEqualTo("a");
        assertThat(audited("/b-own").path("extension").asText()).isEqualTo("b");
        assertThat(audited("/a-to-b").path("reason").asText()).isEqualTo("not_allowlisted");
    }

    @Test
    void denyWinsOverAnAllowWhateverTheOrder() throws Exception {
        sluice = SluiceFixture.start(policy("enforce", ""));
        CurlResult own = as("a", TOKEN_A, url("secret.a.test", "/secret"));
        assertThat(own.httpStatus()).isEqualTo(403);
        assertThat(own.body()).isEqualTo("sluice: denied_by_rule\n");
        assertThat(audited("/secret").path("rule").asText()).isEqualTo("extensions.a.deny[0]");
        CurlResult global = as("a", TOKEN_A, url("globally-blocked.a.test", "/global"));
        assertThat(global.httpStatus()).isEqualTo(403);
        assertThat(audited("/global").path("rule").asText()).isEqualTo("deny[0]");
    }

    @Test
    void methodsAndPathsAreEnforcedOnPlainHttp() throws Exception {
        sluice = SluiceFixture.start(policy("enforce", ""));
        assertThat(as("a", TOKEN_A, url("api.shared.test", "/api/v1/items")).httpStatus()).isEqualTo(200);
        CurlResult post = as("a", TOKEN_A, url("api.shared.test", "/api/v1/post"), "-d", "x=1");
        assertThat(post.httpStatus()).isEqualTo(403);
        assertThat(post.body()).isEqualTo("sluice: method_not_allowed\n");
        CurlResult path = as("a", TOKEN_A, url("api.shared.test", "/admin"));
        assertThat(path.httpStatus()).isEqualTo(403);
        assertThat(path.body()).isEqualTo("sluice: path_not_allowed\n");
        assertThat(origin.requests()).extracting(RecordingOrigin.Seen::uri)
                .contains("/api/v1/items").doesNotContain("/api/v1/post", "/admin");
    }

    @Test
    void reportModeLetsAMissThroughButStillBlocksMetadata() throws Exception {
        sluice = SluiceFixture.start(policy("report", """
                      - host: metadata.a.test
                        ports: [80]
                """));
        CurlResult miss = as("a", TOKEN_A, url("unlisted.test", "/report-miss"));
        assertThat(miss.httpStatus()).isEqualTo(200);
        JsonNode record = audited("/report-miss");
        assertThat(record.path("decision").asText()).isEqualTo("would_deny");
        assertThat(record.path("reason").asText()).isEqualTo("not_allowlisted");

        CurlResult metadata = as("a", TOKEN_A, "http://metadata.a.test/latest/meta-data");
        assertThat(metadata.httpStatus()).isEqualTo(403);
        assertThat(metadata.body()).isEqualTo("sluice: address_class: metadata\n");
        CurlResult literal = as("a", TOKEN_A, "http://169.254.169.254/latest/x");
        assertThat(literal.httpStatus()).isEqualTo(403);
        assertThat(literal.body()).isEqualTo("sluice: address_class: metadata\n");
        assertThat(audited("/latest/x").path("decision").asText()).isEqualTo("deny");
    }

    @Test
    void aBrokenReloadLeavesTheOldPolicyInForce() throws Exception {
        sluice = SluiceFixture.start(policy("enforce", ""));
        PolicyReloader reloader = sluice.reloader();
        String before = sluice.server().policies().current().sha256Hex();

        sluice.writePolicy(policy("enforce", "") + "\nunknown_key: true\n");
        assertThat(reloader.reload()).isEqualTo(PolicyReloader.Result.ERROR);
        assertThat(reloader.reloadErrors()).isEqualTo(1);
        assertThat(reloader.lastErrors()).isNotEmpty();
        assertThat(reloader.lastErrors().get(0).line()).isPositive();
        assertThat(sluice.server().policies().current().sha256Hex()).isEqualTo(before);

        // Traffic is still decided by the old policy.
        assertThat(as("a", TOKEN_A, url("origin.a.test", "/after-broken")).httpStatus()).isEqualTo(200);
        assertThat(as("a", TOKEN_A, url("origin.b.test", "/still-denied")).httpStatus()).isEqualTo(403);
    }

    @Test
    void aGoodReloadTakesEffectForTheNextConnectionWithoutDroppingOpenTunnels() throws Exception {
        try (ServerSocket echo = new ServerSocket(0, 10, InetAddress.getLoopbackAddress())) {
            ExecutorService threads = Executors.newCachedThreadPool();
            threads.submit(() -> {
                try (Socket s = echo.accept()) {
                    s.getInputStream().transferTo(s.getOutputStream());
                }
                return null;
            });
            String withTunnel = policy("enforce", """
                      - host: echo.a.test
                        ports: [%d]
                """.formatted(echo.getLocalPort())).replace("    unlisted.test: 127.0.0.1",
                    "    unlisted.test: 127.0.0.1\n    echo.a.test: 127.0.0.1");
            sluice = SluiceFixture.start(withTunnel);
            sluice.reloader().startWatching();

            try (Socket tunnel = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
                tunnel.setSoTimeout(10_000);
                OutputStream out = tunnel.getOutputStream();
                InputStream in = tunnel.getInputStream();
                String auth = java.util.Base64.getEncoder().encodeToString(("a:" + TOKEN_A).getBytes(StandardCharsets.UTF_8));
                out.write(("CONNECT echo.a.test:" + echo.getLocalPort() + " HTTP/1.1\r\nHost: echo.a.test\r\n"
                        + "Proxy-Authorization: Basic " + auth + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                StringBuilder head = new StringBuilder();
                while (!head.toString().endsWith("\r\n\r\n")) {
                    head.append((char) in.read());
                }
                assertThat(head.toString()).startsWith("HTTP/1.1 200");
                out.write("before\n".getBytes(StandardCharsets.US_ASCII));
                assertThat(new String(in.readNBytes(7), StandardCharsets.US_ASCII)).isEqualTo("before\n");

                // The new policy gives extension a the b-host and drops the echo host and *.a.test.
                String next = policy("enforce", "").replace("- host: \"*.a.test\"", "- host: origin.b.test");
                sluice.writePolicy(next);
                await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadsOk() == 1);

                assertThat(as("a", TOKEN_A, url("origin.b.test", "/now-allowed")).httpStatus()).isEqualTo(200);
                assertThat(as("a", TOKEN_A, url("origin.a.test", "/now-denied")).httpStatus()).isEqualTo(403);

                // The tunnel decided under the old policy still relays.
                out.write("after\n".getBytes(StandardCharsets.US_ASCII));
                assertThat(new String(in.readNBytes(6), StandardCharsets.US_ASCII)).isEqualTo("after\n");
            } finally {
                threads.shutdownNow();
            }
        }
    }
}
