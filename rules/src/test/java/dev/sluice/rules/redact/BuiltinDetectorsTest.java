package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.Fakes.ALNUM;
import static dev.sluice.rules.redact.Fakes.B64;
import static dev.sluice.rules.redact.Fakes.BASE32;
import static dev.sluice.rules.redact.Fakes.DIGITS;
import static dev.sluice.rules.redact.Fakes.HEX;
import static dev.sluice.rules.redact.Fakes.LOWER;
import static dev.sluice.rules.redact.Fakes.UPPER;
import static dev.sluice.rules.redact.Fakes.URLSAFE;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class BuiltinDetectorsTest {

    static final DetectorSet ALL = DetectorSet.builtins();
    static final ObjectMapper JSON = new ObjectMapper();

    /** A positive example: the text contains exactly one credential, {@code secret}, found by {@code id}. */
    record Positive(String id, String text, String secret) {
        @Override
        public String toString() {
            return id;
        }
    }

    /** A negative example: nothing in the text is a credential of any built-in format. */
    record Negative(String id, String text) {
        @Override
        public String toString() {
            return id + ": " + (text.length() > 60 ? text.substring(0, 60) + "..." : text);
        }
    }

    static List<Positive> positives() {
        Fakes f = new Fakes(20261130);
        List<Positive> p = new ArrayList<>();
        String s;
        s = "AKIA" + f.of(BASE32, 16);
        p.add(new Positive("aws-access-key-id", "export AWS_ACCESS_KEY_ID=" + s + "\n", s));
        s = "ASIA" + f.of(BASE32, 16);
        p.add(new Positive("aws-access-key-id", "{\"AccessKeyId\": \"" + s + "\"}", s));
        s = f.of(B64, 40);
        p.add(new Positive("aws-secret-access-key", "[default]\naws_secret_access_key = " + s + "\n", s));
        s = f.of(B64, 40);
        p.add(new Positive("aws-secret-access-key", "{\"SecretAccessKey\": \"" + s + "\", \"x\": 1}", s));
        s = "ABSK" + f.of(B64, 132);
        p.add(new Positive("aws-bedrock-api-key", "AWS_BEARER_TOKEN_BEDROCK=" + s, s));
        s = f.github("ghp_");
        p.add(new Positive("github-pat", "git clone https://x-access-token@github.com # token " + s + " end", s));
        s = "github_pat_" + f.of(ALNUM, 22) + "_" + f.of(ALNUM, 59);
        p.add(new Positive("github-fine-grained-pat", "GITHUB_TOKEN=" + s, s));
        s = f.github("gho_");
        p.add(new Positive("github-oauth-token", "oauth " + s, s));
        s = f.github("ghu_");
        p.add(new Positive("github-app-token", "user token: " + s + ".", s));
        s = f.github("ghs_");
        p.add(new Positive("github-app-token", "installation token '" + s + "'", s));
        s = "ghr_" + f.of(ALNUM, 76);
        p.add(new Positive("github-refresh-token", "refresh=" + s, s));
        s = "glpat-" + f.of(URLSAFE, 20);
        p.add(new Positive("gitlab-pat", "PRIVATE-TOKEN: " + s, s));
        s = "glrt-" + f.of(URLSAFE, 27) + "." + f.of(LOWER + DIGITS, 9);
        p.add(new Positive("gitlab-token", "runner token " + s + " registered", s));
        s = "xoxb-" + f.of(DIGITS, 12) + "-" + f.of(DIGITS, 13) + "-" + f.of(ALNUM, 24);
        p.add(new Positive("slack-token", "SLACK_BOT_TOKEN=" + s, s));
        s = "xapp-1-A" + f.of(UPPER + DIGITS, 10) + "-" + f.of(DIGITS, 13) + "-" + f.of(HEX, 64);
        p.add(new Positive("slack-app-token", "app token " + s, s));
        s = "hooks.slack.com/services/T" + f.of(UPPER + DIGITS, 8) + "/B" + f.of(UPPER + DIGITS, 10) + "/" + f.of(ALNUM, 24);
        p.add(new Positive("slack-webhook-url", "curl -X POST https://" + s + " -d '{}'", s));
        s = "sk_" + "live_" + f.of(ALNUM, 24);
        p.add(new Positive("stripe-secret-key", "stripe.api_key = \"" + s + "\"", s));
        s = "rk_" + "test_" + f.of(ALNUM, 99);
        p.add(new Positive("stripe-secret-key", "restricted " + s, s));
        s = "whsec_" + f.of(ALNUM, 32);
        p.add(new Positive("stripe-webhook-secret", "endpoint secret " + s, s));
        s = "sk-proj-" + f.of(URLSAFE, 74) + "T3Blbk" + "FJ" + f.of(URLSAFE, 74);
        p.add(new Positive("openai-api-key", "OPENAI_API_KEY=" + s + "\n", s));
        s = "sk-" + f.of(ALNUM, 20) + "T3Blbk" + "FJ" + f.of(ALNUM, 20);
        p.add(new Positive("openai-api-key", "old style " + s, s));
        s = "sk-ant-" + "api03-" + f.of(URLSAFE, 93) + "AA";
        p.add(new Positive("anthropic-api-key", "ANTHROPIC_API_KEY=" + s, s));
        s = "sk-or-" + "v1-" + f.of(HEX, 64);
        p.add(new Positive("openrouter-api-key", "key " + s, s));
        s = "gsk_" + f.of(ALNUM, 52);
        p.add(new Positive("groq-api-key", "GROQ_API_KEY=" + s, s));
        s = "xai-" + f.of(ALNUM, 80);
        p.add(new Positive("xai-api-key", "XAI " + s, s));
        s = "AIza" + f.of(URLSAFE, 35);
        p.add(new Positive("google-api-key", "https://maps.googleapis.com/maps/api/js?key=" + s + "&callback=x", s));
        String pk = Fakes.pem("", f.pemBody(20, "\\n"), "\\n");
        p.add(new Positive("gcp-service-account-key", "{\n  \"type\": \"service_account\",\n  \"private_key_id\": \""
                + f.of(HEX, 40) + "\",\n  \"private_key\": \"" + pk + "\\n\",\n  \"client_email\": \"a@b.iam.gserviceaccount.com\"\n}", pk));
        s = "DefaultEndpointsProtocol=https;AccountName=sluicetest;AccountKey=" + f.of(B64, 86) + "==";
        p.add(new Positive("azure-storage-connection-string", "conn = \"" + s + ";EndpointSuffix=core.windows.net\"", s));
        s = f.of(B64, 86) + "==";
        p.add(new Positive("azure-storage-account-key", "AccountKey=" + s + ";", s));
        s = f.of(B64, 43) + "%3D";
        p.add(new Positive("azure-sas-token", "https://acct.blob.core.windows.net/c/b.txt?sp=r&st=2026-01-01&sv=2022-11-02&sr=b&sig=" + s, s));
        s = f.of(B64, 43) + "=";
        p.add(new Positive("azure-shared-access-key",
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + s, s));
        s = f.of(ALNUM, 3) + "8Q~" + f.of(URLSAFE + "~.", 34);
        p.add(new Positive("azure-ad-client-secret", "client_credential: " + s + "\n", s));
        s = "dapi" + f.of(HEX, 32);
        p.add(new Positive("databricks-token", "DATABRICKS_TOKEN=" + s, s));
        s = f.github("npm_");
        p.add(new Positive("npm-token", "//registry.npmjs.org/:_authToken=" + s, s));
        s = "pypi-" + "AgEIcHlwaS5vcmc" + f.of(URLSAFE, 140);
        p.add(new Positive("pypi-token", "password = " + s, s));
        s = "hf_" + f.of(UPPER + LOWER, 34);
        p.add(new Positive("huggingface-token", "HF_TOKEN=" + s, s));
        s = "SK" + f.of(HEX, 32);
        p.add(new Positive("twilio-api-key", "twilio key " + s + " secret", s));
        s = "SG." + f.of(URLSAFE, 22) + "." + f.of(URLSAFE, 43);
        p.add(new Positive("sendgrid-api-key", "SENDGRID_API_KEY=" + s, s));
        s = "shpat_" + f.of(HEX, 32);
        p.add(new Positive("shopify-token", "X-Shopify-Access-Token: " + s, s));
        s = "dop_" + "v1_" + f.of(HEX, 64);
        p.add(new Positive("digitalocean-token", "doctl auth init -t " + s, s));
        s = "hvs." + f.of(URLSAFE, 90);
        p.add(new Positive("vault-token", "VAULT_TOKEN=" + s, s));
        s = "PMAK-" + f.of(HEX, 24) + "-" + f.of(HEX, 34);
        p.add(new Positive("postman-api-key", "x-api-key " + s, s));
        s = "lin_" + "api_" + f.of(ALNUM, 40);
        p.add(new Positive("linear-api-key", "LINEAR " + s, s));
        s = "AGE-SECRET-KEY-1" + f.of("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".toUpperCase(), 58);
        p.add(new Positive("age-secret-key", "# created: 2026\n" + s + "\n", s));
        s = Fakes.pem("RSA", f.pemBody(25, "\n"), "\n");
        p.add(new Positive("private-key-pem", "cat id_rsa\n" + s + "\n$ ", s));
        s = Fakes.pem("OPENSSH", f.pemBody(6, "\n"), "\n");
        p.add(new Positive("private-key-pem", s, s));
        s = "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC," + f.of(HEX, 32).toUpperCase()
                + "\n\n" + f.pemBody(3, "\n") + "-----END EC PRIVATE KEY-----";
        p.add(new Positive("private-key-pem", s + "\n", s));
        s = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + f.pemBody(10, "\n") + "=" + f.of(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----";
        p.add(new Positive("private-key-pem", s, s));
        s = "eyJ" + f.of(URLSAFE, 30) + ".eyJ" + f.of(URLSAFE, 120) + "." + f.of(URLSAFE, 43);
        p.add(new Positive("jwt", "Authorization-ish: Bearer " + s + "\n", s));
        s = f.of(ALNUM, 18);
        p.add(new Positive("url-password", "DATABASE_URL=postgres://app:" + s + "@db.internal:5432/app", s));
        s = f.of(ALNUM + "!#%^&*", 20);
        p.add(new Positive("generic-secret", "DB_PASSWORD=" + s + "\n", s));
        s = f.of(ALNUM, 32);
        p.add(new Positive("generic-secret", "{\"client_secret\": \"" + s + "\"}", s));
        s = f.of(ALNUM, 24);
        p.add(new Positive("generic-secret", "api_key: '" + s + "'", s));
        return p;
    }

    static List<Negative> negatives() {
        Fakes f = new Fakes(7);
        List<Negative> n = new ArrayList<>();
        n.add(new Negative("aws-access-key-id", "AKIA" + "IOSFODNN7" + "EXAMPLE is the documentation's key"));
        n.add(new Negative("aws-access-key-id", "AKIA" + f.of(BASE32, 15) + " is too short"));
        n.add(new Negative("aws-access-key-id", "akia" + f.of(BASE32, 16).toLowerCase() + " is lower case"));
        n.add(new Negative("aws-access-key-id", "Asia and Africa, AKIA" + f.of(BASE32, 17) + "X too long"));
        n.add(new Negative("aws-secret-access-key", "aws_secret_access_key = " + "x".repeat(40)));
        n.add(new Negative("aws-secret-access-key", "unlabelled " + f.of(HEX, 40)));
        n.add(new Negative("aws-bedrock-api-key", "ABSK" + f.of(B64, 20)));
        n.add(new Negative("github-pat", "ghp_" + f.of(ALNUM, 20)));
        n.add(new Negative("github-pat", "ghp_" + "a".repeat(36)));
        n.add(new Negative("github-pat", "xghp_" + f.of(ALNUM, 36)));
        n.add(new Negative("github-fine-grained-pat", "github_pat_" + f.of(ALNUM, 40)));
        n.add(new Negative("github-oauth-token", "gho_" + f.of(ALNUM, 37) + " is too long"));
        n.add(new Negative("github-app-token", "ghs_" + f.of(ALNUM, 35) + " and ghu_" + f.of(ALNUM, 10)));
        n.add(new Negative("github-refresh-token", "ghr_" + f.of(ALNUM, 20)));
        n.add(new Negative("gitlab-pat", "glpat-" + f.of(ALNUM, 10)));
        n.add(new Negative("gitlab-token", "glrt-short"));
        n.add(new Negative("slack-token", "xoxb-1234"));
        n.add(new Negative("slack-app-token", "xapp-1-ABC"));
        n.add(new Negative("slack-webhook-url", "see https://hooks.slack.com/services/ for docs"));
        n.add(new Negative("stripe-secret-key", "pk_" + "live_" + f.of(ALNUM, 24) + " is publishable"));
        n.add(new Negative("stripe-secret-key", "sk_" + "live_" + "short"));
        n.add(new Negative("stripe-webhook-secret", "whsec_abc"));
        n.add(new Negative("openai-api-key", "sk-proj-" + f.of(URLSAFE, 100) + " has no marker"));
        n.add(new Negative("openai-api-key", "the T3BlbkFJ marker alone"));
        n.add(new Negative("anthropic-api-key", "sk-ant-" + "api03-" + f.of(URLSAFE, 20)));
        n.add(new Negative("openrouter-api-key", "sk-or-" + "v1-" + f.of(HEX, 20)));
        n.add(new Negative("groq-api-key", "gsk_" + f.of(ALNUM, 30)));
        n.add(new Negative("xai-api-key", "xai-grok-2 model"));
        n.add(new Negative("google-api-key", "AIza" + f.of(URLSAFE, 30)));
        n.add(new Negative("gcp-service-account-key", "{\"type\": \"service_account\", \"private_key\": \"<redacted>\"}"));
        n.add(new Negative("gcp-service-account-key", "private_key = load_key(path)"));
        n.add(new Negative("azure-storage-account-key", "AccountKey=" + f.of(B64, 20)));
        n.add(new Negative("azure-storage-connection-string", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=short"));
        n.add(new Negative("azure-sas-token", "https://example.com/?sig=abc"));
        n.add(new Negative("azure-shared-access-key", "SharedAccessKey=short"));
        n.add(new Negative("azure-ad-client-secret", "abc8Q~short"));
        n.add(new Negative("databricks-token", "dapi" + f.of(HEX, 16)));
        n.add(new Negative("npm-token", "npm_config_registry and npm_install"));
        n.add(new Negative("pypi-token", "pypi-AgEIcHlwaS5vcmc" + "short"));
        n.add(new Negative("huggingface-token", "from huggingface_hub import hf_hub_download"));
        n.add(new Negative("twilio-api-key", "SKIP the task, ask later; SK" + f.of(HEX, 31)));
        n.add(new Negative("sendgrid-api-key", "SG.short.x"));
        n.add(new Negative("shopify-token", "shpat_" + f.of(HEX, 10)));
        n.add(new Negative("digitalocean-token", "dop_" + "v1_" + f.of(HEX, 10)));
        n.add(new Negative("vault-token", "hvs.abc"));
        n.add(new Negative("postman-api-key", "PMAK-" + f.of(HEX, 10)));
        n.add(new Negative("linear-api-key", "lin_api_short"));
        n.add(new Negative("age-secret-key", "AGE-SECRET-KEY-1" + "QQQ"));
        n.add(new Negative("private-key-pem", "-----BEGIN CERTIFICATE-----\n" + f.pemBody(5, "\n") + "-----END CERTIFICATE-----"));
        n.add(new Negative("private-key-pem", "-----BEGIN PUBLIC KEY-----\n" + f.pemBody(5, "\n") + "-----END PUBLIC KEY-----"));
        n.add(new Negative("private-key-pem", "Keep your private key secret; -----BEGIN RSA PRIVATE KEY----- starts it."));
        n.add(new Negative("jwt", "eyJhbGciOiJIUzI1NiJ9 alone is a header"));
        n.add(new Negative("url-password", "https://user:password@example.com/"));
        n.add(new Negative("url-password", "https://example.com:8443/path and ssh://git@github.com:org/repo"));
        n.add(new Negative("url-password", "redis://:${REDIS_PASSWORD}@cache:6379"));
        n.add(new Negative("generic-secret", "password = changeme123"));
        n.add(new Negative("generic-secret", "api_key = process.env.OPENAI_API_KEY"));
        n.add(new Negative("generic-secret", "password: aaaaaaaaaaaaaaaa"));
        n.add(new Negative("generic-secret", "\"max_tokens\": 4096, \"token_count\": 12"));
        n.add(new Negative("generic-secret", "secret = os.environ[\"SECRET\"]"));
        n.add(new Negative("generic-secret", "const token = getToken(request);"));
        return n;
    }

    @Test
    void thereAreAtLeastThirtyWithDistinctIdsAndDescriptions() {
        List<Detector> all = BuiltinDetectors.all();
        assertThat(all).hasSizeGreaterThanOrEqualTo(30);
        Set<String> ids = new HashSet<>();
        for (Detector d : all) {
            assertThat(ids.add(d.id())).as(d.id()).isTrue();
            assertThat(d.description()).isNotBlank().doesNotContain("\n");
            assertThat(BuiltinDetectors.byId(d.id())).contains(d);
        }
        assertThat(all.get(all.size() - 1)).isEqualTo(BuiltinDetectors.GENERIC_SECRET);
    }

    @Test
    void everyDetectorHasPositiveAndNegativeExamples() {
        Set<String> withPositive = new HashSet<>();
        positives().forEach(p -> withPositive.add(p.id()));
        Set<String> withNegative = new HashSet<>();
        negatives().forEach(n -> withNegative.add(n.id()));
        for (Detector d : BuiltinDetectors.all()) {
            assertThat(withPositive).as("positive example for " + d.id()).contains(d.id());
            assertThat(withNegative).as("negative example for " + d.id()).contains(d.id());
        }
    }

    @Test
    void regexesUseOnlyBoundedRepetition() {
        // '*' or '+' as a quantifier (not escaped, not the possessive marker after '}' or '?'), or {n,}
        Pattern unbounded = Pattern.compile("(?<![\\\\}?])[*+]|\\{\\d+,\\}");
        for (Detector d : BuiltinDetectors.all()) {
            // strip character classes, where * and + are literals
            String p = d.pattern().pattern().replaceAll("\\[(?:\\\\.|[^\\]\\\\])*\\]", "C");
            assertThat(unbounded.matcher(p).find()).as(d.id() + ": " + p).isFalse();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("positives")
    void findsPositiveInPlainText(Positive p) {
        Fakes.Run run = Fakes.run(ALL, BodyFormat.PLAIN, RedactionAction.REDACT, p.text());
        assertThat(run.redactor().findings()).as(p.text()).isEqualTo(Map.of(p.id(), 1L));
        assertThat(run.output()).doesNotContain(p.secret()).contains("[REDACTED:" + p.id() + "]");
        assertThat(run.output()).isEqualTo(p.text().replace(p.secret(), "[REDACTED:" + p.id() + "]"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("positives")
    void findsPositiveInsideJsonStrings(Positive p) throws Exception {
        for (int style = 0; style < 3; style++) {
            String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":"
                    + Fakes.jsonString(p.text(), style >= 1, style == 2) + "}]}";
            Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
            assertThat(run.redactor().findings()).as("style %d: %s", style, body).isEqualTo(Map.of(p.id(), 1L));
            String content = JSON.readTree(run.output()).get("messages").get(0).get("content").asText();
            assertThat(content).isEqualTo(p.text().replace(p.secret(), "[REDACTED:" + p.id() + "]"));
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("negatives")
    void ignoresNegative(Negative n) throws Exception {
        Fakes.Run run = Fakes.run(ALL, BodyFormat.PLAIN, RedactionAction.REDACT, n.text());
        assertThat(run.redactor().findings()).as(n.text()).isEmpty();
        assertThat(run.output()).isEqualTo(n.text());
        String body = "{\"content\":" + Fakes.jsonString(n.text(), true, false) + "}";
        Fakes.Run json = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
        assertThat(json.redactor().findings()).isEmpty();
        assertThat(json.output()).isEqualTo(body);
    }

    @Test
    void checksumOfGeneratedTokensIsValid() {
        Fakes f = new Fakes(1);
        String t = f.github("ghp_");
        assertThat(GithubChecksum.isValid(t)).isTrue();
        String broken = t.substring(0, t.length() - 1) + (t.endsWith("0") ? "1" : "0");
        assertThat(GithubChecksum.isValid(broken)).isFalse();
        assertThat(GithubChecksum.checksum("")).hasSize(6);
    }

    @Test
    void placeholdersOfOneOrTwoRepeatedCharactersAreRejected() {
        assertThat(BuiltinDetectors.notPlaceholder("aaaaaaaaaa")).isFalse();
        assertThat(BuiltinDetectors.notPlaceholder("abababab")).isFalse();
        assertThat(BuiltinDetectors.notPlaceholder("a")).isFalse();
        assertThat(BuiltinDetectors.notPlaceholder("abcabcab")).isTrue();
        assertThat(BuiltinDetectors.notPlaceholder("aab9kq2Z")).isTrue();
    }

    @Test
    void shannonEntropy() {
        assertThat(Detector.shannonEntropy("aaaa")).isZero();
        assertThat(Detector.shannonEntropy("abcd")).isEqualTo(2.0);
        assertThat(Detector.shannonEntropy("")).isZero();
    }

    static Stream<Detector> all() {
        return BuiltinDetectors.all().stream();
    }
}
