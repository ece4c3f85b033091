package dev.sluice.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Recall and false positives of the built-in detectors on a labelled corpus of fake credentials in the
 * places agents leak them (shell output, config files, code, logs, HTTP traces). The corpus is generated
 * here from a fixed seed ({@value #SEED}) with templates of its own, separate from the unit tests'
 * examples; every secret is random and made up at run time. Slices:
 * <ul>
 *   <li>{@code prefixed}: vendor formats with a distinctive prefix, bare in prose or in context;</li>
 *   <li>{@code prefix-less}: passwords and tokens without a prefix, known only by context (curl -u,
 *       Authorization lines, .netrc, .pgpass, XML, Docker auths, URLs, AWS key pairs, assignments in
 *       YAML/JSON/TOML/INI/properties/.env/shell/Python/JS/Go/Java, vendor labels);</li>
 *   <li>{@code encoded}: secrets written encoded (base64 Basic and Docker auths, Kubernetes Secret
 *       data, base64 and base64url of a token or PEM, percent-encoding, JSON inside JSON, {@code \x}/{@code \}{@code u}
 *       escapes, two levels);</li>
 *   <li>{@code negatives}: strings that are not secrets but look like them (documented examples,
 *       placeholders, code expressions, hashes, digests, UUIDs, public keys, certificates, data URLs,
 *       prose).</li>
 * </ul>
 * A positive counts as found when no copy of its secret (nor of its encoded form) is left in the output;
 * a negative counts as a false positive when the redactor reports anything. Each case runs twice: as a
 * plain-text body and as the content of a JSON chat request (JSON mode, the content JSON-escaped).
 *
 * <p>Run: {@code benchmarks/scripts/redaction-corpus.sh} (or {@code java --add-modules jdk.incubator.vector
 * -cp benchmarks/target/benchmarks.jar dev.sluice.benchmarks.RedactionCorpus [--misses]}).
 */
public final class RedactionCorpus {

    static final long SEED = 2112;
    static final int PER_SLICE = 600;

    private static final String UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    private static final String LOWER = "abcdefghijklmnopqrstuvwxyz";
    private static final String DIGITS = "0123456789";
    private static final String ALNUM = UPPER + LOWER + DIGITS;
    private static final String URLSAFE = ALNUM + "_-";
    private static final String B64 = ALNUM + "+/";
    private static final String HEX = "0123456789abcdef";
    private static final String BASE32 = UPPER + "234567";

    private final Random r;

    RedactionCorpus(long seed) {
        this.r = new Random(seed);
    }

    /** One labelled case: {@code secret} (null for a negative) and the forms of it that must not survive. */
    record Case(String slice, String kind, String text, List<String> mustVanish) {
    }

    String s(String alphabet, int n) {
        StringBuilder b = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            b.append(alphabet.charAt(r.nextInt(alphabet.length())));
        }
        return b.toString();
    }

    /** A random password-like value: letters and digits with at least one digit, sometimes a symbol. */
    String password(int n) {
        String v = s(ALNUM, n - 2) + s(DIGITS, 1) + (r.nextInt(3) == 0 ? s("!#%^*+-_@.", 1) : s(LOWER, 1));
        return v;
    }

    @SafeVarargs
    final <T> T pick(T... a) {
        return a[r.nextInt(a.length)];
    }

    // ---------------------------------------------------------------- prefixed

    private final List<Function<RedactionCorpus, String>> prefixed = List.of(
            c -> "AKIA" + c.s(BASE32, 16),
            c -> "ghp_" + c.s(ALNUM, 36),
            c -> "github_pat_" + c.s(ALNUM, 22) + "_" + c.s(ALNUM, 59),
            c -> "glpat-" + c.s(URLSAFE, 20),
            c -> "xoxb-" + c.s(DIGITS, 11) + "-" + c.s(DIGITS, 12) + "-" + c.s(ALNUM, 24),
            c -> "sk_live_" + c.s(ALNUM, 32),
            c -> "sk-proj-" + c.s(URLSAFE, 58) + "T3BlbkFJ" + c.s(URLSAFE, 58),
            c -> "sk-ant-api03-" + c.s(URLSAFE, 93) + "AA",
            c -> "AIza" + c.s(URLSAFE, 35),
            c -> "npm_" + c.s(ALNUM, 36),
            c -> "hf_" + c.s(ALNUM, 34),
            c -> "SG." + c.s(URLSAFE, 22) + "." + c.s(URLSAFE, 43),
            c -> "shpat_" + c.s(HEX, 32),
            c -> "dop_v1_" + c.s(HEX, 64),
            c -> "hvs." + c.s(URLSAFE, 24 + c.r.nextInt(70)),
            c -> "gsk_" + c.s(ALNUM, 52),
            c -> "sk-or-v1-" + c.s(HEX, 64),
            c -> "eyJ" + c.s(URLSAFE, 20) + ".eyJ" + c.s(URLSAFE, 60) + "." + c.s(URLSAFE, 43),
            c -> "sk-admin-" + c.s(URLSAFE, 60 + c.r.nextInt(40)),
            c -> "ATATT3" + c.s(URLSAFE, 184) + "=" + c.s(HEX.toUpperCase(), 8),
            c -> "ntn_" + c.s(ALNUM, 46),
            c -> "key-" + c.s(HEX, 32),
            c -> "EAAA" + c.s(URLSAFE, 60),
            c -> "dp.st.dev." + c.s(ALNUM, 40),
            c -> "sbp_" + c.s(HEX, 40),
            c -> "glsa_" + c.s(ALNUM, 32) + "_" + c.s(HEX, 8),
            c -> "sntryu_" + c.s(HEX, 64),
            c -> "vcp_" + c.s(ALNUM, 48),
            c -> "nfp_" + c.s(ALNUM, 36),
            c -> "HRKU-" + c.s(URLSAFE, 60),
            c -> c.s(ALNUM, 14) + ".atlasv1." + c.s(URLSAFE, 67),
            c -> "NRAK-" + c.s(UPPER + DIGITS, 27),
            c -> "tskey-auth-" + c.s(ALNUM, 11) + "-" + c.s(ALNUM, 32),
            c -> "dckr_pat_" + c.s(URLSAFE, 27),
            c -> "GOCSPX-" + c.s(URLSAFE, 28),
            c -> "ya29." + c.s(URLSAFE, 120),
            c -> "pscale_tkn_" + c.s(URLSAFE, 43),
            c -> "AGE-SECRET-KEY-1" + c.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
            c -> "lin_api_" + c.s(ALNUM, 40),
            c -> "PMAK-" + c.s(HEX, 24) + "-" + c.s(HEX, 34));

    String prefixedContext(String secret) {
        return switch (r.nextInt(8)) {
            case 0 -> "$ env | grep -i key\nHOME=/home/dev\nSERVICE_KEY=" + secret + "\nPATH=/usr/bin\n";
            case 1 -> "I rotated it yesterday, the new one is " + secret + " so update the runner.";
            case 2 -> "{\"name\": \"deploy\", \"credential\": \"" + secret + "\", \"retries\": 3}";
            case 3 -> "deploy:\n  stage: prod\n  key: " + secret + "\n";
            case 4 -> "2026-12-01T10:00:00Z DEBUG client init key=" + secret + " region=eu-west-1";
            case 5 -> "GET /v1/items?limit=10&access_token=" + secret + " HTTP/1.1";
            case 6 -> "# do not commit\nconst k = '" + secret + "';\n";
            default -> secret;
        };
    }

    // ---------------------------------------------------------------- prefix-less

    Case prefixLess() {
        String pw = password(12 + r.nextInt(20));
        String user = pick("deploy", "admin", "ci", "svc_build", "alice");
        String host = pick("db.internal", "api.corp.test", "registry.example.org", "10.0.3.7");
        String text;
        String kind;
        switch (r.nextInt(30)) {
            case 0 -> { kind = "curl -u"; text = "$ curl -s -u " + user + ":" + pw + " https://" + host + "/api/v1/status\n{\"ok\":true}"; }
            case 1 -> { kind = "curl --user"; text = "curl --user '" + user + ":" + pw + "' -X POST https://" + host + "/hook"; }
            case 2 -> { kind = "Authorization: Bearer"; pw = s(ALNUM, 32 + r.nextInt(20)); text = "> GET /me HTTP/1.1\n> Host: " + host + "\n> Authorization: Bearer " + pw + "\n>"; }
            case 3 -> { kind = "Authorization: Token"; pw = s(HEX, 40); text = "headers = {\"Authorization\": \"Token " + pw + "\"}"; }
            case 4 -> { kind = "bare Bearer"; pw = s(URLSAFE, 40); text = "the request was sent with Bearer " + pw + " and failed with 401"; }
            case 5 -> { kind = ".netrc"; text = "machine " + host + "\n  login " + user + "\n  password " + pw + "\n"; }
            case 6 -> { kind = ".netrc one line"; text = "$ cat ~/.netrc\nmachine " + host + " login " + user + " password " + pw + "\n"; }
            case 7 -> { kind = ".pgpass"; text = host + ":5432:app:" + user + ":" + pw + "\n"; }
            case 8 -> { kind = "XML element"; text = "<settings><servers><server><id>nexus</id><username>" + user + "</username><password>" + pw
                    + "</password></server></servers></settings>"; }
            case 9 -> { kind = "XML appSettings"; text = "<appSettings>\n  <add key=\"PaymentApiKey\" value=\"" + pw + "\" />\n</appSettings>"; }
            case 10 -> { kind = "Hadoop property"; pw = s(B64, 40); text = "<property>\n  <name>fs.s3a.secret.key</name>\n  <value>" + pw + "</value>\n</property>"; }
            case 11 -> { kind = "Docker auths"; String b = Base64.getEncoder().encodeToString((user + ":" + pw).getBytes(StandardCharsets.UTF_8));
                text = "{\n  \"auths\": {\n    \"" + host + "\": {\n      \"auth\": \"" + b + "\"\n    }\n  }\n}"; pw = b; }
            case 12 -> { kind = "git token URL"; pw = s(ALNUM, 40); text = "git remote -v\norigin\thttps://" + pw + "@git.example.org/org/repo.git (fetch)"; }
            case 13 -> { kind = "AWS CSV pair"; pw = s(B64, 40); text = "Access key ID,Secret access key\nAKIA" + s(BASE32, 16) + "," + pw + "\n"; }
            case 14 -> { kind = "YAML"; text = "database:\n  host: " + host + "\n  password: " + pw + "\n"; }
            case 15 -> { kind = "JSON"; text = "{\"db_password\": \"" + pw + "\", \"pool\": 5}"; }
            case 16 -> { kind = "TOML"; text = "[service]\napi_key = \"" + pw + "\"\ntimeout = 30\n"; }
            case 17 -> { kind = "INI"; text = "[mysql]\nuser=" + user + "\npassword=" + pw + "\n"; }
            case 18 -> { kind = "properties"; text = "spring.datasource.url=jdbc:postgresql://" + host + "/app\nspring.datasource.password=" + pw + "\n"; }
            case 19 -> { kind = ".env"; text = "DEBUG=false\nSECRET_KEY=" + pw + "\nALLOWED_HOSTS=*\n"; }
            case 20 -> { kind = "export"; text = "export SERVICE_TOKEN=\"" + pw + "\"\n"; }
            case 21 -> { kind = "Python"; text = "DB_PASSWORD = '" + pw + "'\nengine = create_engine(url)\n"; }
            case 22 -> { kind = "JavaScript"; text = "const apiKey = \"" + pw + "\";\nfetch(url, { headers: { 'x-api-key': apiKey } });"; }
            case 23 -> { kind = "Go"; text = "\tclientSecret := \"" + pw + "\"\n\tcfg := oauth2.Config{ClientSecret: clientSecret}"; }
            case 24 -> { kind = "Java"; text = "private static final String PASSWORD = \"" + pw + "\";"; }
            case 25 -> { kind = "URL password"; pw = pw.replace("@", "%40"); text = "DATABASE_URL=postgres://" + user + ":" + pw + "@" + host + ":5432/app"; }
            case 26 -> { kind = "Basic header"; String b = Base64.getEncoder().encodeToString((user + ":" + pw).getBytes(StandardCharsets.UTF_8));
                text = "Authorization: Basic " + b + "\r\nAccept: */*"; pw = b; }
            case 27 -> { kind = "vendor label (Datadog)"; pw = s(HEX, 32); text = "DD_API_KEY=" + pw + " datadog-agent run"; }
            case 28 -> { kind = "vendor label (Twilio)"; pw = s(HEX, 32); text = "TWILIO_ACCOUNT_SID=AC" + s(HEX, 32) + "\nTWILIO_AUTH_TOKEN=" + pw + "\n"; }
            default -> { kind = "vendor label (Cloudflare)"; pw = s(URLSAFE, 40); text = "CLOUDFLARE_API_TOKEN=" + pw; }
        }
        return new Case("prefix-less", kind, text, List.of(pw));
    }

    // ---------------------------------------------------------------- encoded

    Case encoded() {
        String pw = password(16 + r.nextInt(16));
        String b64 = Base64.getEncoder().encodeToString(pw.getBytes(StandardCharsets.UTF_8));
        String token = "ghp_" + s(ALNUM, 36);
        switch (r.nextInt(17)) {
            case 13: {
                String env = pick("# app\n", "") + "APP_ENV=" + pick("production", "staging") + "\nDB_HOST=db.internal\nDB_USER=" + s(LOWER, 6)
                        + "\n" + pick("DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD") + "=" + pw
                        + "\nCACHE_URL=redis://cache.internal:6379/" + r.nextInt(16) + "\nLOG_LEVEL=info\n";
                String t = Base64.getEncoder().encodeToString(env.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 .env (Secret data)", "apiVersion: v1\nkind: Secret\ndata:\n  .env: " + t + "\n", List.of(t));
            }
            case 14: {
                String tok = s(ALNUM, 32 + r.nextInt(12));
                String env = "REGION=eu-west-" + (1 + r.nextInt(3)) + "\nWORKERS=" + r.nextInt(64) + "\n"
                        + pick("API_TOKEN", "SERVICE_TOKEN", "SECRET_KEY", "API_KEY", "APP_SECRET") + "=" + tok + "\n";
                String t = pick(Base64.getEncoder(), Base64.getUrlEncoder().withoutPadding()).encodeToString(env.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 env in a CI variable", "export CI_ENV_FILE=" + t + "\n", List.of(t));
            }
            case 15: {
                String cfg = pick("database:\n  host: db.internal\n  port: 5432\n  username: app\n  password: " + pw + "\n",
                        "{\"service\": \"billing\", \"region\": \"eu-west-1\", \"api_key\": \"" + pw + "\"}",
                        "[default]\nhost = db.internal\nuser = backup\nsecret = " + pw + "\n");
                String t = Base64.getEncoder().encodeToString(cfg.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 config (YAML/JSON/INI)", "  config.yaml: " + t + "\n", List.of(t));
            }
            case 16: {
                String cfg = "{\n\t\"credsStore\": \"" + pick("", "desktop") + "\",\n\t\"auths\": {\n\t\t\"registry.example.org\": {\n\t\t\t\"auth\": \""
                        + Base64.getEncoder().encodeToString(("robot:" + pw).getBytes(StandardCharsets.UTF_8)) + "\"\n\t\t}\n\t}\n}";
                String t = Base64.getEncoder().encodeToString(cfg.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 Docker config.json (credsStore first)", "data:\n  .dockerconfigjson: " + t + "\n", List.of(t));
            }
            case 10: {
                String t = Base64.getUrlEncoder().withoutPadding().encodeToString(
                        pick("sk-ant-api03-" + s(URLSAFE, 93) + "AA", "glpat-" + s(URLSAFE, 20), "AKIA" + s(BASE32, 16))
                                .getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64url of a token", "CI_SECRET_B64URL=" + t + "\n", List.of(t));
            }
            case 11: {
                String t = s(ALNUM, 36 + r.nextInt(20));
                return new Case("encoded", "percent-encoded Authorization in a log", "10:00:01 GET /trace?hdr=Authorization%3A%20Bearer%20"
                        + t + "&id=" + r.nextInt(9999) + " 200", List.of(t));
            }
            case 12: {
                String t = Base64.getEncoder().encodeToString(token.getBytes(StandardCharsets.UTF_8));
                StringBuilder x = new StringBuilder();
                for (char ch : t.toCharArray()) {
                    x.append(String.format("\\x%02x", (int) ch));
                }
                return new Case("encoded", "\\x escapes of base64 (2 levels)", "printf '" + x + "' | base64 -d", List.of(x.toString()));
            }
            case 0: {
                String b = Base64.getEncoder().encodeToString(("bot:" + pw).getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 Basic", "curl -H 'Authorization: Basic " + b + "' https://x.test", List.of(b));
            }
            case 1:
                return new Case("encoded", "Kubernetes Secret data", "apiVersion: v1\nkind: Secret\ndata:\n  password: " + b64 + "\n", List.of(b64));
            case 2: {
                String t = Base64.getEncoder().encodeToString(token.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 of a token", "echo " + t + " | base64 -d", List.of(t));
            }
            case 3: {
                String pem = "-----BEGIN RSA PRIVATE KEY-----\n" + s(B64, 64) + "\n" + s(B64, 64) + "\n" + s(B64, 20) + "\n-----END RSA PRIVATE KEY-----\n";
                String t = Base64.getEncoder().encodeToString(pem.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", "base64 PEM (tls.key)", "data:\n  tls.key: " + t + "\n", List.of(t));
            }
            case 4: {
                String p = s(ALNUM, 10) + "@" + s(ALNUM, 6) + "!";
                String enc = p.replace("@", "%40").replace("!", "%21");
                return new Case("encoded", "percent-encoded URL password", "redis://default:" + enc + "@cache.internal:6379/0", List.of(enc));
            }
            case 5: {
                String enc = pw.replace("+", "%2B").replace("@", "%40") + "%21";
                return new Case("encoded", "percent-encoded form body", "grant_type=password&username=ci&password=" + enc + "&scope=all", List.of(enc));
            }
            case 6: {
                String body = s(B64, 64) + "\\\\n" + s(B64, 64) + "\\\\n" + s(B64, 30);
                String text = "{\"tool_result\": \"{\\\"private_key\\\": \\\"-----BEGIN PRIVATE KEY-----\\\\n" + body
                        + "\\\\n-----END PRIVATE KEY-----\\\\n\\\"}\"}";
                return new Case("encoded", "PEM in double-escaped JSON", text, List.of(body.substring(0, 64)));
            }
            case 7: {
                StringBuilder u = new StringBuilder();
                for (char ch : token.toCharArray()) {
                    u.append(ch == '_' ? "\\u005f" : String.valueOf(ch));
                }
                return new Case("encoded", "\\u escapes (JSON string)", "{\"token\": \"" + u + "\"}", List.of(token.substring(4)));
            }
            case 8: {
                StringBuilder x = new StringBuilder();
                for (char ch : token.toCharArray()) {
                    x.append(String.format("\\x%02x", (int) ch));
                }
                return new Case("encoded", "\\x escapes", "printf '" + x + "'", List.of(x.toString()));
            }
            default: {
                String cfg = "{\"auths\":{\"registry.example.org\":{\"auth\":\""
                        + Base64.getEncoder().encodeToString(("robot:" + pw).getBytes(StandardCharsets.UTF_8)) + "\"}}}";
                String t = Base64.getEncoder().encodeToString(cfg.getBytes(StandardCharsets.UTF_8));
                return new Case("encoded", ".dockerconfigjson", "data:\n  .dockerconfigjson: " + t + "\n", List.of(t));
            }
        }
    }

    // ---------------------------------------------------------------- negatives

    String negative() {
        switch (r.nextInt(40)) {
            case 36: return "data:\n  .env: " + Base64.getEncoder().encodeToString(("DB_PASSWORD=changeme\nAPI_TOKEN=${API_TOKEN}\nLOG_LEVEL="
                    + pick("info", "debug") + "\n").getBytes(StandardCharsets.UTF_8));
            case 37: return "  README: " + Base64.getEncoder().encodeToString(("Rotate the password every " + r.nextInt(90)
                    + " days; the API token is read from the vault.\n").getBytes(StandardCharsets.UTF_8));
            case 38: return "  tls.crt: " + Base64.getEncoder().encodeToString(("-----BEGIN CERTIFICATE-----\n" + s(B64, 64) + "\n"
                    + s(B64, 64) + "\n-----END CERTIFICATE-----\n").getBytes(StandardCharsets.UTF_8));
            case 39: return "blob: " + s(B64, 30 + r.nextInt(60)) + pick("UEFTU1dPUk", "cGFzc3dvcm", "VE9LRU", "c2VjcmV0") + s(B64, 80) + "==";
            case 0: return "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
            case 1: return "STRIPE_KEY=sk_live_" + "x".repeat(24 + r.nextInt(8));
            case 2: return "token: ghp_" + "X".repeat(36);
            case 3: return "password: \"\"\nusername: " + pick("admin", "root");
            case 4: return "password: changeme" + r.nextInt(1000);
            case 5: return "api_key: ${" + pick("API_KEY", "SERVICE_TOKEN", "SECRET") + "}";
            case 6: return "token = \"<your-" + pick("api-key", "token", "secret") + ">\"";
            case 7: return "API_KEY = os.environ[\"" + pick("OPENAI_API_KEY", "SERVICE_KEY") + "\"]";
            case 8: return "const token = process.env." + pick("GITHUB_TOKEN", "NPM_TOKEN") + " || '';";
            case 9: return "n.apiKey=e.apiKey||t.apiKey,n.token=e.token&&e.token.value,r.secret=o.secret;";
            case 10: return "password = get_password(user)  # " + pick("hashed", "from vault");
            case 11: return "\"digest\": \"sha256:" + s(HEX, 64) + "\", \"token_sha256\": \"" + s(HEX, 64) + "\"";
            case 12: return "commit " + s(HEX, 40) + "\nAuthor: Dev <dev@example.org>";
            case 13: return "\"integrity\": \"sha512-" + s(B64, 86) + "==\"";
            case 14: return "image: registry.example.org/app@sha256:" + s(HEX, 64);
            case 15: return "\"request_id\": \"" + java.util.UUID.randomUUID() + "\", \"token_id\": \"" + new java.util.UUID(r.nextLong(), r.nextLong()) + "\"";
            case 16: return "token: data:image/png;base64," + s(B64, 300) + "==";
            case 17: return "-----BEGIN PUBLIC KEY-----\n" + s(B64, 64) + "\n" + s(B64, 24) + "\n-----END PUBLIC KEY-----";
            case 18: return "-----BEGIN CERTIFICATE-----\n" + s(B64, 64) + "\n" + s(B64, 64) + "\n-----END CERTIFICATE-----";
            case 19: return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + s(B64, 43) + " dev@laptop";
            case 20: return "The password must be at least 12 characters and the token expires after " + r.nextInt(60) + " minutes.";
            case 21: return "Authentication uses a bearer token; see the Authorization header docs.";
            case 22: return "curl -u \"$USER:$API_TOKEN\" https://api.example.org";
            case 23: return "docker run --rm -u " + (1000 + r.nextInt(10)) + ":1000 -v $PWD:/src img";
            case 24: return "<password></password><token>${TOKEN}</token>";
            case 25: return "{\"usage\": {\"prompt_tokens\": " + r.nextInt(9999) + ", \"completion_tokens\": " + r.nextInt(999) + "}, \"max_tokens\": 4096}";
            case 26: return "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9 is only the header";
            case 27: return "WWW-Authenticate: Basic realm=\"staging\"";
            case 28: return "the machine learning model was trained on " + r.nextInt(100) + " GPUs";
            case 29: return "export PGHOST=localhost PGPORT=5432";
            case 30: return "git clone https://git@github.com:org/repo.git && ssh://deploy@host";
            case 31: return "secret_name: " + pick("db-creds", "tls-cert") + "\npassword_file: /run/secrets/db\ntoken_url: https://auth.example.org/oauth/token";
            case 32: return "md5sum: " + s(HEX, 32) + "  release.tar.gz";
            case 33: return "AKIA" + "X".repeat(16) + " and key-" + "0".repeat(32);
            case 34: return "def rotate(token: str) -> str:\n    return hashlib.sha256(token.encode()).hexdigest()\n";
            default: return "To reset the secret, run `vault kv put secret/app password=@file` and restart.";
        }
    }

    List<Case> corpus() {
        List<Case> cases = new ArrayList<>();
        for (int i = 0; i < PER_SLICE; i++) {
            Function<RedactionCorpus, String> f = prefixed.get(i % prefixed.size());
            String secret = f.apply(this);
            cases.add(new Case("prefixed", secret.substring(0, Math.min(6, secret.length())), prefixedContext(secret), List.of(secret)));
        }
        for (int i = 0; i < PER_SLICE; i++) {
            cases.add(prefixLess());
        }
        for (int i = 0; i < PER_SLICE; i++) {
            cases.add(encoded());
        }
        for (int i = 0; i < PER_SLICE; i++) {
            cases.add(new Case("negatives", "negative", negative(), List.of()));
        }
        return cases;
    }

    static final ObjectMapper JSON = new ObjectMapper();

    record Outcome(String output, Map<String, Long> findings) {
    }

    static Outcome run(DetectorSet set, BodyFormat format, String body) throws BodyTooLargeException {
        StreamingRedactor red = set.newRedactor(format, RedactionAction.REDACT, Long.MAX_VALUE);
        byte[] in = body.getBytes(StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        // two chunks, split at a random-looking but fixed place, as bodies arrive
        int cut = in.length / 3;
        out.append(new String(red.feed(in, 0, cut), StandardCharsets.UTF_8));
        out.append(new String(red.feed(in, cut, in.length - cut), StandardCharsets.UTF_8));
        out.append(new String(red.finish(), StandardCharsets.UTF_8));
        return new Outcome(out.toString(), red.findings());
    }

    public static void main(String[] args) throws Exception {
        boolean misses = List.of(args).contains("--misses");
        DetectorSet set = DetectorSet.builtins();
        List<Case> cases = new RedactionCorpus(SEED).corpus();
        Map<String, int[]> bySlice = new LinkedHashMap<>();
        Map<String, int[]> byKind = new TreeMap<>();
        for (Case c : cases) {
            int[] t = bySlice.computeIfAbsent(c.slice(), x -> new int[5]);
            int[] k = byKind.computeIfAbsent(c.slice() + " / " + c.kind(), x -> new int[5]);
            String json = JSON.writeValueAsString(Map.of("model", "m", "messages",
                    List.of(Map.of("role", "tool", "content", c.text()))));
            Outcome plain = run(set, BodyFormat.PLAIN, c.text());
            Outcome inJson = run(set, BodyFormat.JSON, json);
            String jsonContent = JSON.readTree(inJson.output()).get("messages").get(0).get("content").asText();
            t[0]++;
            k[0]++;
            if (c.mustVanish().isEmpty()) {
                boolean fpPlain = !plain.findings().isEmpty();
                boolean fpJson = !inJson.findings().isEmpty();
                t[1] += fpPlain ? 1 : 0;
                t[2] += fpJson ? 1 : 0;
                if (misses && (fpPlain || fpJson)) {
                    System.out.println("FALSE POSITIVE " + plain.findings() + inJson.findings() + ": " + c.text().replace("\n", "\\n"));
                }
            } else {
                boolean okPlain = c.mustVanish().stream().noneMatch(plain.output()::contains);
                boolean okJson = c.mustVanish().stream().noneMatch(jsonContent::contains);
                t[1] += okPlain ? 1 : 0;
                t[2] += okJson ? 1 : 0;
                k[1] += okPlain ? 1 : 0;
                k[2] += okJson ? 1 : 0;
                if (misses && (!okPlain || !okJson)) {
                    System.out.println("MISS " + c.slice() + " / " + c.kind() + (okPlain ? "" : " [plain]") + (okJson ? "" : " [json]")
                            + ": " + c.text().replace("\n", "\\n"));
                }
            }
        }
        System.out.println(set);
        System.out.printf("corpus seed %d, %d cases%n%n", SEED, cases.size());
        System.out.println("| slice | cases | plain | JSON |");
        System.out.println("|---|---:|---:|---:|");
        for (var e : bySlice.entrySet()) {
            int[] t = e.getValue();
            String what = e.getKey().equals("negatives") ? "false positives" : "recall";
            System.out.printf("| %s (%s) | %d | %.1f %% | %.1f %% |%n", e.getKey(), what, t[0], 100.0 * t[1] / t[0], 100.0 * t[2] / t[0]);
        }
        System.out.println();
        System.out.println("| slice / kind | cases | recall plain | recall JSON |");
        System.out.println("|---|---:|---:|---:|");
        for (var e : byKind.entrySet()) {
            int[] t = e.getValue();
            if (e.getKey().startsWith("negatives") || e.getKey().startsWith("prefixed")) {
                continue;
            }
            System.out.printf("| %s | %d | %.0f %% | %.0f %% |%n", e.getKey(), t[0], 100.0 * t[1] / t[0], 100.0 * t[2] / t[0]);
        }
    }
}
