package dev.sluice.rules.credential;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.credential.CredentialRewriter.Outcome;
import dev.sluice.rules.credential.CredentialRewriter.Result;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Placeholders and the head decision: swaps where inject allows it, refusal of every other place and encoding. */
class CredentialRewriterTest {

    private static final Placeholders KEYS = new Placeholders(new byte[32]);
    private static final Map<String, String> VALUES = Map.of("openai", "sk-REAL", "git", "ghp_REAL");
    private final PlaceholderTable table;
    private final String ph;
    private final String git;

    CredentialRewriterTest() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                inspect: {api.openai.com: {}, git.example.org: {}}
                extensions:
                  agent: {credentials: [openai, git]}
                  other: {credentials: [openai]}
                credentials:
                  openai:
                    source: {env: X}
                    inject: {hosts: [api.openai.com], paths: ["/v1/**"], header: [authorization, x-api-key], query: key, body: true}
                  git:
                    source: {env: Y}
                    inject: {hosts: [git.example.org], basic: true}
                """, "p.yaml");
        table = PlaceholderTable.of(p, KEYS);
        ph = KEYS.placeholder("agent", "openai");
        git = KEYS.placeholder("agent", "git");
    }

    private Result decide(String extension, boolean intercepted, String host, String uri, String... headers) {
        List<Map.Entry<String, String>> list = new java.util.ArrayList<>();
        for (int i = 0; i < headers.length; i += 2) {
            list.add(new AbstractMap.SimpleImmutableEntry<>(headers[i], headers[i + 1]));
        }
        return CredentialRewriter.decide(table, extension, intercepted, host, 443, uri, list, VALUES::get);
    }

    @Test
    void placeholdersAreStablePerExtensionAndShaped() {
        assertThat(ph).matches("sluice-cred-openai-[0-9a-f]{32}").isEqualTo(KEYS.placeholder("agent", "openai"));
        assertThat(KEYS.placeholder("other", "openai")).isNotEqualTo(ph);
        assertThat(new Placeholders(new byte[32]).placeholder("agent", "openai")).isEqualTo(ph);
        byte[] other = new byte[32];
        other[0] = 1;
        assertThat(new Placeholders(other).placeholder("agent", "openai")).isNotEqualTo(ph);
        assertThat(KEYS.toString()).doesNotContain("0, 0");
    }

    @Test
    void swapsInListedHeadersBasicAndQuery() {
        Result r = decide("agent", true, "api.openai.com", "/v1/chat?key=" + ph + "&a=b",
                "Authorization", "Bearer " + ph, "X-Api-Key", ph, "Accept", "*/*");
        assertThat(r.outcome()).isEqualTo(Outcome.REWRITTEN);
        assertThat(r.headers().get(0).getValue()).isEqualTo("Bearer sk-REAL");
        assertThat(r.headers().get(1).getValue()).isEqualTo("sk-REAL");
        assertThat(r.uri()).isEqualTo("/v1/chat?key=sk-REAL&a=b");
        assertThat(r.injected()).containsExactly("openai");

        String basic = "Basic " + Base64.getEncoder().encodeToString(("x:" + git).getBytes(StandardCharsets.UTF_8));
        Result g = decide("agent", true, "git.example.org", "/repo.git/info/refs?service=git-upload-pack",
                "Authorization", basic);
        assertThat(g.outcome()).isEqualTo(Outcome.REWRITTEN);
        assertThat(new String(Base64.getDecoder().decode(g.headers().get(0).getValue().substring(6)),
                StandardCharsets.UTF_8)).isEqualTo("x:ghp_REAL");
    }

    @Test
    void noPlaceholderPassesUntouched() {
        Result r = decide("agent", true, "api.openai.com", "/v1/chat", "Authorization", "Bearer sk-own");
        assertThat(r.outcome()).isEqualTo(Outcome.PASS);
    }

    @Test
    void everyOtherPlaceIsAMismatch() {
        assertThat(decide("agent", true, "other.example.org", "/v1/chat", "Authorization", "Bearer " + ph).outcome())
                .as("foreign host").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", false, "api.openai.com", "/v1/chat", "Authorization", "Bearer " + ph).outcome())
                .as("not intercepted").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", true, "api.openai.com", "/v2/chat", "Authorization", "Bearer " + ph).outcome())
                .as("outside paths").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("other", true, "api.openai.com", "/v1/chat", "Authorization", "Bearer " + ph).outcome())
                .as("another extension's placeholder").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", true, "api.openai.com", "/v1/chat", "Cookie", "s=" + ph).outcome())
                .as("a header inject does not list").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", true, "git.example.org", "/r", "X-Token", git).credential()).isEqualTo("git");
        String pct = URLEncoder.encode(ph, StandardCharsets.UTF_8).replace("-", "%2D");
        assertThat(decide("agent", true, "other.example.org", "/x?q=" + pct).outcome())
                .as("percent-encoded").isEqualTo(Outcome.MISMATCH);
        String b64 = Base64.getEncoder().encodeToString(("user:" + ph).getBytes(StandardCharsets.UTF_8));
        assertThat(decide("agent", true, "other.example.org", "/x", "Authorization", "Basic " + b64).outcome())
                .as("base64 Basic").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", true, "other.example.org", "/x", "X-Blob", "zz" + Base64.getUrlEncoder()
                .encodeToString(("{\"k\":\"" + ph + "\"}").getBytes(StandardCharsets.UTF_8))).outcome())
                .as("base64url at an offset").isEqualTo(Outcome.MISMATCH);
        String escaped = ph.replace("s", "\\u0073");
        assertThat(decide("agent", true, "other.example.org", "/x", "X-Json", "{\"k\":\"" + escaped + "\"}").outcome())
                .as("JSON escapes").isEqualTo(Outcome.MISMATCH);
        assertThat(decide("agent", true, "other.example.org", "/x", "X", "sluice-cred-made-up-"
                + "0123456789abcdef0123456789abcdef").credential()).as("a shape no grant has").isEqualTo("unknown");
    }

    @Test
    void bodiesAreSwappedByTheirTypeAndEveryOtherPlaceholderIsRefused() {
        Map<String, String> values = Map.of("openai", "sk-\"q/\\", "git", "g");
        Result json = CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "application/json; charset=utf-8", "{\"k\":\"" + ph + "\"}", values::get);
        assertThat(json.outcome()).isEqualTo(Outcome.REWRITTEN);
        assertThat(json.uri()).isEqualTo("{\"k\":\"sk-\\\"q/\\\\\"}");
        Result form = CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "application/x-www-form-urlencoded", "k=" + ph + "&a=1", values::get);
        assertThat(form.uri()).isEqualTo("k=sk-%22q%2F%5C&a=1");
        assertThat(CredentialRewriter.decideBody(table, "agent", true, "other.example.org", 443, "/v1/x",
                "application/json", "{\"k\":\"" + ph + "\"}", values::get).outcome()).isEqualTo(Outcome.MISMATCH);
        assertThat(CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "text/plain", "k " + ph, values::get).outcome()).as("a type inject.body does not read")
                .isEqualTo(Outcome.MISMATCH);
        assertThat(CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "application/json", "{\"k\":\"" + ph.replace("-", "\\u002d") + "\"}", values::get).outcome())
                .as("JSON-escaped: recognised, not swapped").isEqualTo(Outcome.MISMATCH);
        assertThat(CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "application/json", "{\"k\":\"" + Base64.getEncoder().encodeToString(ph.getBytes(StandardCharsets.UTF_8))
                        + "\"}", values::get).outcome()).as("base64 in a body").isEqualTo(Outcome.MISMATCH);
        assertThat(CredentialRewriter.decideBody(table, "agent", true, "api.openai.com", 443, "/v1/x",
                "application/json", "{\"k\":\"plain\"}", values::get).outcome()).isEqualTo(Outcome.PASS);
    }

    @Test
    void anUnreadableValueIsUnavailable() {
        List<Map.Entry<String, String>> h = List.of(new AbstractMap.SimpleImmutableEntry<>("x-api-key", ph));
        Result r = CredentialRewriter.decide(table, "agent", true, "api.openai.com", 443, "/v1/x", h, n -> null);
        assertThat(r.outcome()).isEqualTo(Outcome.UNAVAILABLE);
        assertThat(r.credential()).isEqualTo("openai");
    }

    @Test
    void theBase64RunCheckAnswersAsTheRunPatternDoes() {
        java.util.regex.Pattern run = java.util.regex.Pattern.compile("[A-Za-z0-9+/_-]{24,}={0,2}");
        java.util.Random random = new java.util.Random(15);
        String alphabet = "Aa0+/_-= .:%~\u00e9";
        for (int n = 0; n < 20_000; n++) {
            StringBuilder b = new StringBuilder();
            int length = random.nextInt(60);
            for (int i = 0; i < length; i++) {
                // mostly base64 characters, so that runs of about 24 are common
                b.append(random.nextInt(8) == 0 ? alphabet.charAt(7 + random.nextInt(alphabet.length() - 7))
                        : alphabet.charAt(random.nextInt(7)));
            }
            String s = b.toString();
            assertThat(CredentialRewriter.hasBase64Run(s)).as(s).isEqualTo(run.matcher(s).find());
        }
        assertThat(CredentialRewriter.hasBase64Run("x".repeat(23))).isFalse();
        assertThat(CredentialRewriter.hasBase64Run("x".repeat(24))).isTrue();
        assertThat(CredentialRewriter.hasBase64Run("x".repeat(23) + " " + "y".repeat(23))).isFalse();
    }
}
