package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.ProxyStatus;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.rules.decision.Reason;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Refusals as clients see them: the RFC 9209 {@code Proxy-Status} field beside {@code X-Sluice-Reason}
 * on plain and CONNECT refusals (curl -v), and the JSON body when Accept prefers it (curl, Python
 * requests). The hint names only the asking extension.
 */
class ProxyStatusTest {

    private static final String TOKEN_A = "token-a";
    private static final String TOKEN_B = "token-b";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** RFC 9209 section 2.3: the registered error types. */
    private static final Set<String> RFC9209_TYPES = Set.of("dns_timeout", "dns_error", "destination_not_found",
            "destination_unavailable", "destination_ip_prohibited", "destination_ip_unroutable", "connection_refused",
            "connection_terminated", "connection_timeout", "connection_read_timeout", "connection_write_timeout",
            "connection_limit_reached", "tls_protocol_error", "tls_certificate_error", "tls_alert_received",
            "http_request_error", "http_request_denied", "http_response_incomplete",
            "http_response_header_section_size", "http_response_header_size", "http_response_body_size",
            "http_response_trailer_section_size", "http_response_trailer_size", "http_response_transfer_coding",
            "http_response_content_coding", "http_response_timeout", "http_upgrade_failed", "http_protocol_error",
            "proxy_internal_response", "proxy_internal_error", "proxy_configuration_error", "proxy_loop_detected");

    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @TempDir
    Path work;

    private static String sha(String token) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    }

    @BeforeEach
    void start() throws Exception {
        origin = new RecordingOrigin();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  a:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: ok.test
                        ports: [%d]
                      - host: metadata.test
                        ports: [%2$d]
                  b:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: secret-of-b.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    ok.test: 127.0.0.1
                    unlisted.test: 127.0.0.1
                    secret-of-b.test: 127.0.0.1
                    metadata.test: 169.254.169.254
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(sha(TOKEN_A), origin.port(), sha(TOKEN_B), origin.port()));
    }

    @AfterEach
    void stop() throws Exception {
        sluice.close();
        origin.close();
    }

    private String proxyA() {
        return "http://a:" + TOKEN_A + "@127.0.0.1:" + sluice.port();
    }

    private CurlResult curl(String... args) {
        List<String> all = new ArrayList<>(List.of("-v"));
        all.addAll(List.of(args));
        return Curl.run(all);
    }

    private String url(String host, String path) {
        return "http://" + host + ":" + origin.port() + path;
    }

    @Test
    void everyReasonMapsToAnRfc9209ErrorType() {
        for (Reason r : Reason.values()) {
            if (r == Reason.ALLOWLISTED) {
                assertThat(ProxyStatus.errorType(r)).isNull();
            } else {
                assertThat(RFC9209_TYPES).as(r.label()).contains(ProxyStatus.errorType(r));
            }
        }
        assertThat(ProxyStatus.value(Reason.ADDRESS_CLASS, "address_class: \"x\"\\"))
                .isEqualTo("sluice; error=destination_ip_prohibited; details=\"address_class: \\\"x\\\"\\\\\"");
    }

    @Test
    void curlSeesProxyStatusOnPlainAndConnectRefusals() {
        CurlResult plain = curl("-x", proxyA(), url("unlisted.test", "/x"));
        assertThat(plain.httpStatus()).isEqualTo(403);
        assertThat(plain.stderr()).contains("< X-Sluice-Reason: not_allowlisted",
                "< Proxy-Status: sluice; error=http_request_denied; details=\"not_allowlisted\"");
        assertThat(plain.body()).isEqualTo("sluice: not_allowlisted\n");

        // A CONNECT refusal: curl never shows the body, but -v shows the fields of the proxy's answer.
        CurlResult tunnel = curl("-x", proxyA(), "https://unlisted.test:" + origin.port() + "/x");
        assertThat(tunnel.exitCode()).isNotZero();
        assertThat(tunnel.stderr()).contains("< HTTP/1.1 403", "< X-Sluice-Reason: not_allowlisted",
                "< Proxy-Status: sluice; error=http_request_denied; details=\"not_allowlisted\"");

        CurlResult metadata = curl("-x", proxyA(), url("metadata.test", "/latest/meta-data/"));
        assertThat(metadata.httpStatus()).isEqualTo(403);
        assertThat(metadata.stderr()).contains(
                "< Proxy-Status: sluice; error=destination_ip_prohibited; details=\"address_class: metadata\"");

        CurlResult port = curl("-x", proxyA(), "http://ok.test:1/");
        assertThat(port.stderr()).contains(
                "< Proxy-Status: sluice; error=http_request_denied; details=\"port_not_allowed\"");

        CurlResult unknown = curl("-x", "http://a:wrong@127.0.0.1:" + sluice.port(), url("ok.test", "/"));
        assertThat(unknown.httpStatus()).isEqualTo(407);
        assertThat(unknown.stderr()).contains(
                "< Proxy-Status: sluice; error=http_request_denied; details=\"unknown_extension\"");
    }

    @Test
    void aJsonBodyWhenAcceptPrefersJsonWithAHintAboutOnlyTheAskingExtension() throws Exception {
        CurlResult r = curl("-x", proxyA(), "-H", "Accept: application/json", url("secret-of-b.test", "/data"));
        assertThat(r.httpStatus()).isEqualTo(403);
        assertThat(r.stderr()).containsIgnoringCase("< Content-Type: application/json");
        assertThat(r.stderr()).contains("< Proxy-Status: sluice; error=http_request_denied; details=\"not_allowlisted\"");
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.get("error").asText()).isEqualTo("not_allowlisted");
        assertThat(body.get("host").asText()).isEqualTo("secret-of-b.test");
        assertThat(body.get("extension").asText()).isEqualTo("a");
        assertThat(body.get("rule").asText()).isEqualTo("implicit-deny");
        assertThat(body.get("event_id").asText()).matches("[0-9a-f]{16}");
        assertThat(body.get("hint").asText()).contains("sluice audit suggest --extension a");
        // Nothing about extension b: not its name as an extension, not its rules.
        assertThat(body.get("hint").asText()).doesNotContain("extension b", "secret-of-b", "token");
        assertThat(r.body()).doesNotContain("\"b\"", "extensions.b");

        // Text stays the default: no Accept, */*, and text preferred over JSON.
        assertThat(curl("-x", proxyA(), url("unlisted.test", "/")).body()).isEqualTo("sluice: not_allowlisted\n");
        assertThat(curl("-x", proxyA(), "-H", "Accept: */*", url("unlisted.test", "/")).body())
                .isEqualTo("sluice: not_allowlisted\n");
        assertThat(curl("-x", proxyA(), "-H", "Accept: text/plain, application/json;q=0.5", url("unlisted.test", "/"))
                .body()).isEqualTo("sluice: not_allowlisted\n");
        assertThat(Answers.prefersJson("text/html, application/json;q=0.9")).isTrue();
        assertThat(Answers.prefersJson("application/json;q=0")).isFalse();
    }

    @Test
    void aRefusedConnectAnswersJsonToo() throws Exception {
        String auth = java.util.Base64.getEncoder().encodeToString(("a:" + TOKEN_A).getBytes(StandardCharsets.UTF_8));
        try (dev.sluice.proxy.testing.RawHttp raw = new dev.sluice.proxy.testing.RawHttp(sluice.address(), 10_000)) {
            dev.sluice.proxy.testing.RawHttp.Response r = raw.send("CONNECT unlisted.test:443 HTTP/1.1\r\n"
                    + "Host: unlisted.test:443\r\nAccept: application/json\r\nProxy-Authorization: Basic " + auth
                    + "\r\n\r\n").read();
            assertThat(r.status()).isEqualTo(403);
            assertThat(r.header("Proxy-Status")).isEqualTo("sluice; error=http_request_denied; details=\"not_allowlisted\"");
            JsonNode body = JSON.readTree(r.body());
            assertThat(body.get("error").asText()).isEqualTo("not_allowlisted");
            assertThat(body.get("host").asText()).isEqualTo("unlisted.test");
            assertThat(body.get("extension").asText()).isEqualTo("a");
        }
    }

    @Test
    void pythonRequestsSeesTheFieldAndTheJsonBody() throws Exception {
        Process probe = new ProcessBuilder("python3", "-c", "import requests").redirectErrorStream(true).start();
        boolean done = probe.waitFor(30, TimeUnit.SECONDS);
        Assumptions.assumeTrue(done && probe.exitValue() == 0,
                "python3 with the requests module is not installed (Debian: apt-get install python3-requests); skipped");
        Path script = work.resolve("client.py");
        Files.writeString(script, """
                import json, sys, requests
                proxy = sys.argv[1]
                proxies = {"http": proxy, "https": proxy}
                r = requests.get(sys.argv[2], proxies=proxies, headers={"Accept": "application/json"}, timeout=20)
                print(json.dumps({"status": r.status_code, "proxy_status": r.headers.get("Proxy-Status"),
                                  "reason": r.headers.get("X-Sluice-Reason"), "body": r.json()}))
                try:
                    requests.get(sys.argv[3], proxies=proxies, timeout=20)
                    print(json.dumps({"tunnel": "opened"}))
                except requests.exceptions.ProxyError as e:
                    print(json.dumps({"tunnel": str(e)}))
                """);
        ProcessBuilder pb = new ProcessBuilder("python3", script.toString(), proxyA(),
                url("unlisted.test", "/py"), "https://unlisted.test:" + origin.port() + "/py");
        Map<String, String> env = pb.environment();
        for (String v : Curl.PROXY_VARIABLES) {
            env.remove(v);
        }
        env.put("NO_PROXY", "");
        env.put("no_proxy", "");
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        List<String> lines = out.lines().toList();
        JsonNode plain = JSON.readTree(lines.get(0));
        assertThat(plain.get("status").asInt()).isEqualTo(403);
        assertThat(plain.get("proxy_status").asText())
                .isEqualTo("sluice; error=http_request_denied; details=\"not_allowlisted\"");
        assertThat(plain.get("reason").asText()).isEqualTo("not_allowlisted");
        assertThat(plain.get("body").get("error").asText()).isEqualTo("not_allowlisted");
        assertThat(plain.get("body").get("hint").asText()).contains("sluice audit suggest --extension a");
        // requests shows a CONNECT refusal only as its status line: the fields are for curl -v and logs.
        assertThat(JSON.readTree(lines.get(1)).get("tunnel").asText()).contains("403");
    }
}
