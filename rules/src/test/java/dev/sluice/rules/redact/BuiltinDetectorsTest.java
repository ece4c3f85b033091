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
    record Positive(String id, String text, String secret, String otherId, String otherSecret) {
        Positive(String id, String text, String secret) {
            this(id, text, secret, null, null);
        }

        Map<String, Long> findings() {
            return otherId == null ? Map.of(id, 1L) : Map.of(id, 1L, otherId, 1L);
        }

        String redacted() {
            String r = text.replace(secret, "[REDACTED:" + id + "]");
            return otherId == null ? r : r.replace(otherSecret, "[REDACTED:" + otherId + "]");
        }

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
        p.add(new Positive("npm-token", "//registry.example.org/:_authToken=" + s, s));
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
        s = "sk-admin-" + f.of(URLSAFE, 120);
        p.add(new Positive("openai-admin-key", "OPENAI_ADMIN_KEY=" + s + "\n", s));
        s = "lsv2_" + "pt_" + f.of(HEX, 32) + "_" + f.of(HEX, 10);
        p.add(new Positive("langsmith-api-key", "LANGCHAIN_API_KEY=" + s, s));
        s = f.of("123456789", 1) + f.of(DIGITS, 9) + ":AA" + f.of(URLSAFE, 33);
        p.add(new Positive("telegram-bot-token", "TELEGRAM_BOT_TOKEN=" + s, s));
        s = "M" + f.of(URLSAFE, 25) + "." + f.of(URLSAFE, 6) + "." + f.of(URLSAFE, 38);
        p.add(new Positive("discord-bot-token", "DISCORD_TOKEN=" + s, s));
        s = "ATATT3" + f.of(URLSAFE, 180) + "=" + f.of(HEX.toUpperCase(), 8);
        p.add(new Positive("atlassian-api-token", "jira token " + s, s));
        s = "ntn_" + f.of(ALNUM, 46);
        p.add(new Positive("notion-token", "NOTION_TOKEN: " + s, s));
        s = "key-" + f.of(HEX, 32);
        p.add(new Positive("mailgun-api-key", "auth=('api', '" + s + "')", s));
        s = f.of(HEX, 32) + "-us" + f.of("123456789", 1);
        p.add(new Positive("mailchimp-api-key", "MAILCHIMP_API_KEY: " + s, s));
        s = "tfp_" + f.of(URLSAFE, 44);
        p.add(new Positive("typeform-token", "typeform " + s, s));
        s = "EAAA" + f.of(URLSAFE, 60);
        p.add(new Positive("square-token", "SQUARE_ACCESS_TOKEN=" + s, s));
        s = "shippo_" + "live_" + f.of(HEX, 40);
        p.add(new Positive("shippo-token", "ShippoToken " + s, s));
        s = "duffel_" + "test_" + f.of(URLSAFE, 43);
        p.add(new Positive("duffel-token", "duffel " + s, s));
        s = "EZAK" + f.of(ALNUM, 54);
        p.add(new Positive("easypost-api-key", "EasyPost::Client.new(api_key: " + s + ")", s));
        s = "FLWSECK_TEST-" + f.of("abcdefgh0123456789", 32) + "-X";
        p.add(new Positive("flutterwave-secret-key", "FLW_SECRET=" + s, s));
        s = "sbp_" + f.of(HEX, 40);
        p.add(new Positive("supabase-key", "supabase login --token " + s, s));
        s = "pscale_" + "tkn_" + f.of(URLSAFE, 43);
        p.add(new Positive("planetscale-token", "PLANETSCALE_SERVICE_TOKEN=" + s, s));
        s = "dp.st." + "prd." + f.of(ALNUM, 40);
        p.add(new Positive("doppler-token", "DOPPLER_TOKEN=" + s, s));
        s = "AAAA" + f.of(URLSAFE, 7) + ":APA91b" + f.of(URLSAFE, 134);
        p.add(new Positive("firebase-fcm-server-key", "Authorization: key=" + s, s));
        s = "GOCSPX-" + f.of(URLSAFE, 28);
        p.add(new Positive("google-oauth-client-secret", "\"client_secret\":\"" + s + "\"", s));
        s = "ya29." + f.of(URLSAFE, 150);
        p.add(new Positive("google-oauth-token", "access token ya29 is " + s + " and expires", s));
        s = "vcp_" + f.of(ALNUM, 56);
        p.add(new Positive("vercel-token", "vercel deploy --token " + s, s));
        s = "nfp_" + f.of(ALNUM, 36);
        p.add(new Positive("netlify-token", "NETLIFY_AUTH_TOKEN=" + s, s));
        s = "HRKU-" + f.of(URLSAFE, 60);
        p.add(new Positive("heroku-api-key", "heroku token " + s, s));
        s = java.util.UUID.nameUUIDFromBytes(f.of(ALNUM, 16).getBytes()).toString();
        p.add(new Positive("heroku-api-key-legacy", "HEROKU_API_KEY=" + s + "\n", s));
        s = f.of(ALNUM, 14) + ".atlasv1." + f.of(URLSAFE, 67);
        p.add(new Positive("terraform-cloud-token", "credentials \"app.terraform.io\" { token = \"" + s + "\" }", s));
        s = "pul-" + f.of(HEX, 40);
        p.add(new Positive("pulumi-token", "PULUMI_ACCESS_TOKEN=" + s, s));
        s = "CCIPAT_" + f.of(ALNUM, 22) + "_" + f.of(HEX, 40);
        p.add(new Positive("circleci-token", "Circle-Token: " + s, s));
        s = "dckr_" + "pat_" + f.of(URLSAFE, 27);
        p.add(new Positive("docker-hub-token", "docker login -u me -p " + s, s));
        s = "rubygems_" + f.of(HEX, 48);
        p.add(new Positive("rubygems-api-key", ":rubygems_api_key: " + s, s));
        s = "sntryu_" + f.of(HEX, 64);
        p.add(new Positive("sentry-token", "SENTRY_AUTH_TOKEN=" + s, s));
        s = "tskey-" + "auth-" + f.of(ALNUM, 12) + "-" + f.of(ALNUM, 33);
        p.add(new Positive("tailscale-key", "tailscale up --authkey=" + s, s));
        s = "ops_" + "eyJ" + f.of(B64, 300);
        p.add(new Positive("onepassword-service-account-token", "OP_SERVICE_ACCOUNT_TOKEN=" + s, s));
        s = "glsa_" + f.of(ALNUM, 32) + "_" + f.of(HEX, 8);
        p.add(new Positive("grafana-token", "grafana sa token " + s, s));
        s = "LTAI" + f.of(ALNUM, 20);
        p.add(new Positive("alibaba-access-key-id", "AccessKeyId: " + s, s));
        s = "sk." + "eyJ" + f.of(URLSAFE, 80) + "." + f.of(URLSAFE, 22);
        p.add(new Positive("mapbox-secret-token", "MAPBOX_DOWNLOADS_TOKEN=" + s, s));
        s = "aio_" + f.of(ALNUM, 28);
        p.add(new Positive("adafruit-io-key", "ADAFRUIT_IO_KEY = '" + s + "'", s));
        s = "ico-" + f.of(ALNUM, 32);
        p.add(new Positive("infracost-api-key", "INFRACOST_API_KEY=" + s, s));
        s = "NRAK-" + f.of(UPPER + DIGITS, 27);
        p.add(new Positive("new-relic-key", "Api-Key: " + s, s));
        s = f.of(HEX, 36) + "NRAL";
        p.add(new Positive("new-relic-key", "license_key: " + s + "\n", s));
        s = f.of(HEX, 32);
        p.add(new Positive("datadog-key", "DD_API_KEY=" + s + "\n", s));
        s = f.of(HEX, 32);
        p.add(new Positive("datadog-key", "-H \"DD-API-KEY: " + s + "\"", s));
        s = f.of(ALNUM, 9) + "+" + f.of(ALNUM, 10);
        p.add(new Positive("pagerduty-api-key", "Authorization: Token token=" + s, s));
        s = f.of(ALNUM, 19) + "7";
        p.add(new Positive("pagerduty-api-key", "PAGERDUTY_API_KEY=" + s, s));
        s = "00" + f.of(URLSAFE, 40);
        p.add(new Positive("authorization-credential", "-H 'Authorization: SSWS " + s + "'", s));
        s = "00" + f.of(URLSAFE, 40);
        p.add(new Positive("okta-api-token", "OKTA_API_TOKEN: " + s + "\n", s));
        s = f.of(HEX, 32);
        p.add(new Positive("twilio-auth-token", "TWILIO_AUTH_TOKEN=" + s, s));
        s = f.of(URLSAFE, 40);
        p.add(new Positive("cloudflare-api-token", "CLOUDFLARE_API_TOKEN=" + s, s));
        s = f.of(B64, 64) + "\n" + f.of(B64, 64) + "\n" + f.of(B64, 20);
        p.add(new Positive("putty-private-key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 3\n" + s
                + "\nPrivate-MAC: " + f.of(HEX, 64) + "\n", s));
        // prefix-less, by context
        String keyId = "AKIA" + f.of(BASE32, 16);
        s = f.of(UPPER, 4) + f.of(DIGITS, 4) + f.of(LOWER, 4) + "/" + f.of(B64, 27);
        p.add(new Positive("aws-secret-near-key-id", "User name,Access key ID,Secret access key\ndeploy," + keyId + "," + s + "\n",
                s, "aws-access-key-id", keyId));
        s = f.of(ALNUM, 14) + "!";
        p.add(new Positive("curl-user-password", "curl -u deploy:" + s + " https://ci.internal/api", s));
        s = f.of(ALNUM, 20);
        p.add(new Positive("curl-user-password", "curl --user 'admin:" + s + "' -X POST", s));
        s = f.of(ALNUM, 24) + f.of(DIGITS, 2);
        p.add(new Positive("authorization-credential", "> Authorization: Bearer " + s + "\n< HTTP/1.1 200", s));
        s = f.of(HEX, 40);
        p.add(new Positive("authorization-credential", "requests.get(url, headers={'Authorization': 'Token " + s + "'})", s));
        s = java.util.Base64.getEncoder().encodeToString(("svc:" + f.of(ALNUM, 16)).getBytes());
        p.add(new Positive("basic-auth-credential", "Authorization: Basic " + s + "\r\n", s));
        s = f.of(ALNUM, 18);
        p.add(new Positive("netrc-password", "machine api.internal.test\n  login deploy\n  password " + s + "\n", s));
        s = f.of(ALNUM, 16);
        p.add(new Positive("pgpass-password", "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:" + s + "\n", s));
        s = f.of(ALNUM, 20);
        p.add(new Positive("xml-secret-element", "<server>\n  <id>repo</id>\n  <password>" + s + "</password>\n</server>", s));
        s = f.of(ALNUM, 32);
        p.add(new Positive("xml-secret-attribute", "<appSettings>\n  <add key=\"StripeApiKey\" value=\"" + s + "\" />", s));
        s = f.of(B64, 40);
        p.add(new Positive("xml-secret-property", "<property>\n  <name>fs.s3a.secret.key</name>\n  <value>" + s
                + "</value>\n</property>", s));
        s = java.util.Base64.getEncoder().encodeToString(("robot:" + f.of(ALNUM, 24)).getBytes());
        p.add(new Positive("docker-config-auth", "{\"auths\": {\"registry.example.org\": {\"auth\": \"" + s + "\"}}}", s));
        s = f.of(ALNUM, 40);
        p.add(new Positive("git-credential-url", "git clone https://" + s + "@git.example.org/org/repo.git", s));
        s = java.util.Base64.getEncoder().encodeToString(Fakes.pem("EC", f.pemBody(4, "\n"), "\n").getBytes());
        p.add(new Positive("base64-private-key", "kind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.key: " + s + "\n", s));
        s = java.util.Base64.getEncoder().encodeToString(("{\"auths\":{\"registry.example.org\":{\"auth\":\""
                + java.util.Base64.getEncoder().encodeToString(("ci:" + f.of(ALNUM, 20)).getBytes()) + "\"}}}").getBytes());
        p.add(new Positive("base64-docker-config", "data:\n  .dockerconfigjson: " + s + "\n", s));
        s = f.of(ALNUM, 12) + "9";
        p.add(new Positive("generic-secret", "password = \"" + s + "\"  # toml", s));
        s = f.of(ALNUM, 20) + "7";
        p.add(new Positive("generic-secret", "export API_TOKEN=" + s + "\n", s));
        s = f.of(ALNUM, 20) + "7";
        p.add(new Positive("generic-secret", "db.password=" + s + "\n", s));
        s = f.of(ALNUM, 20) + "7";
        p.add(new Positive("generic-secret", "\tdbPassword := \"" + s + "\"", s));
        s = f.of(ALNUM, 20) + "7";
        p.add(new Positive("generic-secret", "private static final String API_KEY = \"" + s + "\";", s));
        s = f.of(ALNUM, 20) + "7";
        p.add(new Positive("generic-secret", "DB_PASS=" + s, s));
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
        n.add(new Negative("openai-admin-key", "sk-admin-" + f.of(ALNUM, 10)));
        n.add(new Negative("langsmith-api-key", "lsv2_pt_" + f.of(HEX, 12)));
        n.add(new Negative("telegram-bot-token", "at 12:AA the meeting; 123456789:AAshort"));
        n.add(new Negative("discord-bot-token", "discord bot started; Bot ready"));
        n.add(new Negative("atlassian-api-token", "ATATT3 is a prefix"));
        n.add(new Negative("notion-token", "secret_sauce and ntn_" + f.of(ALNUM, 10)));
        n.add(new Negative("mailgun-api-key", "api-key-rotation and key-" + f.of(HEX, 12)));
        n.add(new Negative("mailchimp-api-key", "lang=en-us; " + f.of(HEX, 20) + "-us1"));
        n.add(new Negative("typeform-token", "tfp_x"));
        n.add(new Negative("square-token", "EAAA" + f.of(ALNUM, 10) + " and sq0atp-short"));
        n.add(new Negative("shippo-token", "shippo_test_" + f.of(HEX, 10)));
        n.add(new Negative("duffel-token", "duffel_live_x"));
        n.add(new Negative("easypost-api-key", "EZAK" + f.of(ALNUM, 10)));
        n.add(new Negative("flutterwave-secret-key", "FLWSECK_TEST-" + f.of(HEX, 10)));
        n.add(new Negative("supabase-key", "sbp_" + f.of(HEX, 10) + " and sb_publishable_" + f.of(ALNUM, 30)));
        n.add(new Negative("planetscale-token", "pscale_tkn_short"));
        n.add(new Negative("doppler-token", "dp.st.x"));
        n.add(new Negative("firebase-fcm-server-key", "AAAA:APA91b"));
        n.add(new Negative("google-oauth-client-secret", "GOCSPX-short"));
        n.add(new Negative("google-oauth-token", "ya29.short and 1//0 comments"));
        n.add(new Negative("vercel-token", "vcp_" + f.of(ALNUM, 10)));
        n.add(new Negative("netlify-token", "info_nfp_ and nfp_" + f.of(ALNUM, 10)));
        n.add(new Negative("heroku-api-key", "HRKU-short"));
        n.add(new Negative("heroku-api-key-legacy", "HEROKU_APP_NAME=my-app"));
        n.add(new Negative("terraform-cloud-token", "x.atlasv1.y"));
        n.add(new Negative("pulumi-token", "pul-" + f.of(HEX, 10)));
        n.add(new Negative("circleci-token", "CCIPAT_short"));
        n.add(new Negative("docker-hub-token", "dckr_pat_short"));
        n.add(new Negative("rubygems-api-key", "rubygems_" + f.of(HEX, 10)));
        n.add(new Negative("sentry-token", "sntryu_" + f.of(HEX, 10)));
        n.add(new Negative("tailscale-key", "tskey-auth-short"));
        n.add(new Negative("onepassword-service-account-token", "ops_eyJ" + f.of(B64, 10)));
        n.add(new Negative("grafana-token", "glsa_" + f.of(ALNUM, 10)));
        n.add(new Negative("alibaba-access-key-id", "LTAI" + f.of(ALNUM, 5)));
        n.add(new Negative("mapbox-secret-token", "pk.eyJ" + f.of(URLSAFE, 80) + "." + f.of(URLSAFE, 22) + " is public"));
        n.add(new Negative("adafruit-io-key", "aio_short"));
        n.add(new Negative("infracost-api-key", "ico-short"));
        n.add(new Negative("new-relic-key", "NRAK-short and " + f.of(HEX, 10) + "NRAL"));
        n.add(new Negative("datadog-key", "DD_API_KEY=${DD_API_KEY}"));
        n.add(new Negative("pagerduty-api-key", "Authorization: Token token=<your-token>"));
        n.add(new Negative("okta-api-token", "Authorization: SSWS ${OKTA_TOKEN}"));
        n.add(new Negative("twilio-auth-token", "TWILIO_AUTH_TOKEN=your_auth_token"));
        n.add(new Negative("cloudflare-api-token", "CLOUDFLARE_API_TOKEN=" + "x".repeat(40)));
        n.add(new Negative("putty-private-key", "Private-Lines: 3\nshort"));
        n.add(new Negative("aws-secret-near-key-id", "AKIA" + "IOSFODNN7" + "EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"));
        n.add(new Negative("aws-secret-near-key-id", "commit " + f.of(HEX, 40) + " and ASIA is a continent"));
        n.add(new Negative("curl-user-password", "docker run -u 1000:1000 img && git push -u origin main"));
        n.add(new Negative("curl-user-password", "curl -u \"$USER:$TOKEN\" https://x && curl -u admin:changeme"));
        n.add(new Negative("authorization-credential", "Authentication uses a bearer token from the environment."));
        n.add(new Negative("authorization-credential", "headers.Authorization = \"Bearer \" + token; Bearer ${TOKEN}; Bearer <token>"));
        n.add(new Negative("authorization-credential", "if (key.toLowerCase() === 'authorization') continue; Authorization: Bearer YOUR_API_KEY_HERE"));
        n.add(new Negative("basic-auth-credential", "Basic authentication is configured; Basic YWJjZGVmZ2hpams="));
        n.add(new Negative("netrc-password", "the machine learning model; machine x login y password changeme"));
        n.add(new Negative("pgpass-password", "localhost:5432:*:postgres:${PGPASSWORD}"));
        n.add(new Negative("xml-secret-element", "<password>${db.password}</password> <token>EOF</token> <secret></secret>"));
        n.add(new Negative("xml-secret-attribute", "<add key=\"ApiKey\" value=\"your-api-key\" /> <add key=\"Timeout\" value=\"30000000\" />"));
        n.add(new Negative("xml-secret-property", "<name>fs.s3a.secret.key</name><value>${env.S3_SECRET}</value>"));
        n.add(new Negative("docker-config-auth", "{\"auth\": \"" + java.util.Base64.getEncoder().encodeToString("no colon here".getBytes()) + "\"}"));
        n.add(new Negative("base64-private-key", "tls.crt: " + java.util.Base64.getEncoder().encodeToString(
                ("-----BEGIN CERTIFICATE-----\n" + f.pemBody(3, "\n") + "-----END CERTIFICATE-----\n").getBytes())));
        n.add(new Negative("encoded-base64", "echo " + java.util.Base64.getEncoder().encodeToString(
                "ghp_ is how a GitHub token starts".getBytes(java.nio.charset.StandardCharsets.UTF_8)) + " | base64 -d"));
        n.add(new Negative("encoded-base64", "Z2hwX" + f.of(B64, 40)));
        n.add(new Negative("encoded-base64-text", "env: " + java.util.Base64.getEncoder().encodeToString(
                "DB_PASSWORD=changeme\nAPI_TOKEN=${API_TOKEN}\n# reset the password weekly\n".getBytes())));
        n.add(new Negative("encoded-base64-text", f.of(B64, 40) + EncodedDetectors.base64Stem("PASSWORD", 0) + f.of(B64, 60)));
        n.add(new Negative("encoded-escapes", "printf '\\x48\\x65\\x6c\\x6c\\x6f\\x20\\x77\\x6f\\x72\\x6c\\x64\\x21'"));
        n.add(new Negative("encoded-percent", "https://www.example.org/search?q=how%20to%20rotate%20a%20token&lang=en"));
        n.add(new Negative("encoded-percent", "next=https%3A%2F%2Fapp.example.org%2Fsettings%3Ftab%3Dsecurity"));
        n.add(new Negative("encoded-escapes", "const s = \"caf\\u00e9 \\u4f60\\u597d\";"));
        n.add(new Negative("base64-docker-config", "config: " + java.util.Base64.getEncoder().encodeToString(
                "{\"auths\":{\"registry.example.org\":{}}}".getBytes())));
        n.add(new Negative("git-credential-url", "https://first.last.name.surname@example.org/ and https://user@host"));
        n.add(new Negative("generic-secret", "password: \"\" and token: <your-key> and API_KEY=${API_KEY}"));
        n.add(new Negative("generic-secret", "n.apiKey=e.apiKey||t.apiKey,r.token=o.token&&o.token.value"));
        n.add(new Negative("generic-secret", "\"token_sha256\": \"" + f.of(HEX, 64) + "\""));
        n.add(new Negative("generic-secret", "\"integrity\": \"sha512-" + f.of(B64, 86) + "==\", \"token\": \"sha256:" + f.of(HEX, 64) + "\""));
        n.add(new Negative("generic-secret", "secret_id: " + java.util.UUID.nameUUIDFromBytes(new byte[] {1}) + " token: "
                + java.util.UUID.nameUUIDFromBytes(new byte[] {2})));
        n.add(new Negative("generic-secret", "token: data:image/png;base64," + f.of(B64, 200)));
        n.add(new Negative("generic-secret", "password = os.environ['DB_PASSWORD']; token = process.env.GITHUB_TOKEN"));
        n.add(new Negative("generic-secret", "api_key = 12345678901234"));
        n.add(new Negative("generic-secret", "-----BEGIN PUBLIC KEY-----\n" + f.pemBody(3, "\n") + "-----END PUBLIC KEY-----\n"
                + "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + f.of(B64, 43) + " me@host"));
        n.add(new Negative("generic-secret", "image: registry.example.org/app@sha256:" + f.of(HEX, 64)));
        return n;
    }

    @Test
    void thereAreAtLeastEightyWithDistinctIdsAndDescriptions() {
        List<Detector> all = BuiltinDetectors.all();
        assertThat(all).hasSizeGreaterThanOrEqualTo(80);
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
            if (!EncodedDetectors.all().contains(d)) {
                // a decoding detector reports under the inner detector's id: its positives are in
                // EncodedDetectorsTest
                assertThat(withPositive).as("positive example for " + d.id()).contains(d.id());
            }
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
        assertThat(run.redactor().findings()).as(p.text()).isEqualTo(p.findings());
        assertThat(run.output()).doesNotContain(p.secret()).contains("[REDACTED:" + p.id() + "]");
        assertThat(run.output()).isEqualTo(p.redacted());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("positives")
    void findsPositiveInsideJsonStrings(Positive p) throws Exception {
        for (int style = 0; style < 3; style++) {
            String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":"
                    + Fakes.jsonString(p.text(), style >= 1, style == 2) + "}]}";
            Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
            assertThat(run.redactor().findings()).as("style %d: %s", style, body).isEqualTo(p.findings());
            String content = JSON.readTree(run.output()).get("messages").get(0).get("content").asText();
            assertThat(content).isEqualTo(p.redacted());
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
