package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.credential.PlaceholderKey;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.GitHttpOrigin;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.rules.credential.Placeholders;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Credential injection end to end: curl and a real {@code git clone} send placeholders through Sluice to
 * loopback TLS origins that record what they receive. The origin sees the real value; a placeholder sent
 * anywhere the policy does not bind it to is refused with 403 {@code credential_host_mismatch} and the
 * origin sees nothing.
 */
class CredentialInjectionTest {

    private static final String API = "api.llm.test";
    private static final String OTHER = "other.llm.test";
    private static final String GIT = "git.llm.test";
    private static final String PLAIN = "plain.llm.test";
    /** An inspected host without redaction: bodies reach the credential phase as the client coded them. */
    private static final String RAW = "raw.llm.test";
    private static final String REAL = "sk-real-0123456789abcdefghij";
    private static final String GIT_REAL = "ghp_realtoken0123456789";

    @TempDir
    Path dir;
    private RecordingOrigin api;
    private RecordingOrigin plain;
    private GitHttpOrigin git;
    private SluiceFixture sluice;
    private Placeholders placeholders;

    @BeforeEach
    void start() throws Exception {
        TestTls tls = TestTls.create(dir.resolve("tls"), API, OTHER, RAW);
        TestTls gitTls = TestTls.create(dir.resolve("git-tls"), GIT);
        api = RecordingOrigin.tls(tls, false);
        plain = new RecordingOrigin();
        Path repos = Files.createDirectories(dir.resolve("repos"));
        run(repos, "git", "init", "-q", "--bare", "-b", "main", "remote.git");
        Path work = Files.createDirectories(dir.resolve("seed"));
        run(work, "git", "init", "-q", "-b", "main");
        Files.writeString(work.resolve("README"), "hello\n");
        run(work, "git", "add", "README");
        run(work, "git", "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-q", "-m", "first");
        run(work, "git", "push", "-q", repos.resolve("remote.git").toString(), "main:main");
        git = new GitHttpOrigin(repos, gitTls, false, "Basic " + Base64.getEncoder()
                .encodeToString(("x:" + GIT_REAL).getBytes(StandardCharsets.UTF_8)));
        Path key = dir.resolve("llm.key");
        Files.writeString(key, "  " + REAL + "\n");
        Path json = dir.resolve("git.json");
        Files.writeString(json, "{\"token\": \"" + GIT_REAL + "\"}");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  agent:
                    auth: { token_sha256: "%8$s" }
                    allow:
                      - { host: %1$s, ports: [%4$d] }
                      - { host: %2$s, ports: [%4$d] }
                      - { host: %3$s, ports: [%5$d] }
                      - { host: %9$s, ports: [%10$d] }
                      - { host: %14$s, ports: [%4$d] }
                    credentials: [llm, git, gone]
                  other:
                    auth: { token_sha256: "%11$s" }
                    allow:
                      - { host: %1$s, ports: [%4$d] }
                    credentials: [llm]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts: { %1$s: 127.0.0.1, %2$s: 127.0.0.1, %3$s: 127.0.0.1, %9$s: 127.0.0.1, %14$s: 127.0.0.1 }
                inspect:
                  %1$s: {}
                  %2$s: {}
                  %3$s: {}
                  %14$s: { redact: false }
                tls:
                  extra_trust: ["%6$s", "%12$s"]
                credentials:
                  llm:
                    source: { file: "%7$s" }
                    placeholder_env: LLM_API_KEY
                    inject:
                      hosts: [%1$s, %14$s]
                      ports: [%4$d]
                      paths: ["/v1/**"]
                      header: [authorization, x-api-key]
                      query: key
                      body: true
                  git:
                    source: { file: "%13$s", key: token }
                    inject: { hosts: [%3$s], ports: [%5$d], basic: true }
                  gone:
                    source: { file: "%13$s.absent" }
                    optional: true
                    inject: { hosts: [%1$s], ports: [%4$d], header: x-gone }
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(API, OTHER, GIT, api.port(), git.port(), tls.caPem().toAbsolutePath(), key,
                sha256("tok-agent"), PLAIN, plain.port(), sha256("tok-other"), gitTls.caPem().toAbsolutePath(), json, RAW));
        placeholders = PlaceholderKey.loadOrCreate(sluice.dataDir());
    }

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        api.close();
        plain.close();
        git.close();
    }

    private static String sha256(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    }

    private String proxy(String extension) {
        return "http://" + extension + ":tok-" + extension + "@127.0.0.1:" + sluice.port();
    }

    private CurlResult curl(String extension, String url, String... headers) {
        List<String> args = new ArrayList<>(List.of("-x", proxy(extension), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString()));
        for (String h : headers) {
            args.add("-H");
            args.add(h);
        }
        args.add(url);
        return Curl.run(args, Duration.ofSeconds(30));
    }

    private String url(String host, String path) {
        return "https://" + host + ":" + api.port() + path;
    }

    private JsonNode lastAudit(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText("").startsWith(path)).reduce((a, b) -> b).orElse(null),
                r -> r != null);
    }

    @Test
    void sluiceEnvPrintsThePlaceholdersTheExtensionMayUse() {
        java.io.StringWriter out = new java.io.StringWriter();
        int code = dev.sluice.proxy.cli.SluiceCli.execute(new java.io.PrintWriter(out),
                new java.io.PrintWriter(new java.io.StringWriter()), "env", "--extension", "other", "--policy",
                sluice.dataDir().resolve("policy.yaml").toString(), "--data-dir", sluice.dataDir().toString());
        assertThat(code).isZero();
        assertThat(out.toString()).contains("export LLM_API_KEY='" + placeholders.placeholder("other", "llm") + "'")
                .doesNotContain(REAL).doesNotContain("GIT=");
    }

    /** With another data dir than the running Sluice's, the placeholders would not match: say so on stderr. */
    @Test
    void sluiceEnvWarnsWhenItsDataDirHasNoPlaceholderKeyYet(@org.junit.jupiter.api.io.TempDir Path other) {
        java.io.StringWriter out = new java.io.StringWriter();
        java.io.StringWriter err = new java.io.StringWriter();
        int code = dev.sluice.proxy.cli.SluiceCli.execute(new java.io.PrintWriter(out), new java.io.PrintWriter(err),
                "env", "--extension", "other", "--policy", sluice.dataDir().resolve("policy.yaml").toString(),
                "--data-dir", other.resolve("data").toString());
        assertThat(code).isZero();
        assertThat(err.toString()).contains("no credential placeholder key in").contains("--data-dir");
        assertThat(out.toString()).doesNotContain(placeholders.placeholder("other", "llm"));

        java.io.StringWriter again = new java.io.StringWriter();
        dev.sluice.proxy.cli.SluiceCli.execute(new java.io.PrintWriter(new java.io.StringWriter()),
                new java.io.PrintWriter(again), "env", "--extension", "other", "--policy",
                sluice.dataDir().resolve("policy.yaml").toString(), "--data-dir", sluice.dataDir().toString());
        assertThat(again.toString()).doesNotContain("no credential placeholder key");
    }

    @Test
    void bearerApiKeyAndQueryReachTheOriginAsTheRealValue() {
        String ph = placeholders.placeholder("agent", "llm");
        CurlResult r = curl("agent", url(API, "/v1/chat?key=" + ph + "&x=1"), "Authorization: Bearer " + ph,
                "x-api-key: " + ph);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        RecordingOrigin.Seen seen = api.requests().get(api.requests().size() - 1);
        assertThat(seen.header("authorization")).isEqualTo("Bearer " + REAL);
        assertThat(seen.header("x-api-key")).isEqualTo(REAL);
        assertThat(seen.uri()).isEqualTo("/v1/chat?key=" + REAL + "&x=1");
        JsonNode audit = lastAudit("/v1/chat");
        assertThat(audit.path("credentials").toString()).isEqualTo("[\"llm\"]");
        assertThat(audit.toString()).doesNotContain(REAL);
        assertThat(sluice.server().metrics().scrape())
                .contains("sluice_credential_injections_total{credential=\"llm\",extension=\"agent\"} 1.0");
    }

    @Test
    void anOriginThatEchoesTheKeyNeverHandsItToTheSandbox() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        Path headers = dir.resolve("echo-headers.txt");
        List<String> args = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-D", headers.toString(), "-H", "x-api-key: " + ph,
                "-H", "X-Echo-Header: x-api-key", url(API, "/v1/echo")));
        CurlResult r = Curl.run(args, Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        assertThat(api.requests().get(0).header("x-api-key")).as("the origin got the real key").isEqualTo(REAL);
        String b64 = Base64.getEncoder().withoutPadding().encodeToString(ph.getBytes(StandardCharsets.UTF_8));
        assertThat(r.body()).doesNotContain(REAL).doesNotContain(
                Base64.getEncoder().withoutPadding().encodeToString(REAL.getBytes(StandardCharsets.UTF_8)))
                .contains("data: {\"k\":\"" + ph + "\"}").contains(ph + " " + ph + " " + b64);
        assertThat(Files.readString(headers)).doesNotContain(REAL).containsIgnoringCase("x-echo: " + ph);
    }

    @Test
    void anEchoInTheReasonPhraseATrailerOrAnyBase64AlignmentIsScrubbedToo() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        Path headers = dir.resolve("echo-everywhere-headers.txt");
        CurlResult r = Curl.run(List.of("-x", proxy("agent"), "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                "--http1.1", "-D", headers.toString(), "-H", "x-api-key: " + ph, "-H", "X-Echo-Header: x-api-key",
                "-H", "X-Echo-Everywhere: 1", url(API, "/v1/echo-everywhere")), Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        assertThat(api.requests().get(0).header("x-api-key")).as("the origin got the real key").isEqualTo(REAL);
        String head = Files.readString(headers);
        assertThat(head).as("status line and trailer").doesNotContain(REAL).contains(ph);
        for (String line : r.body().split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            // replacing a value inside a run can leave it a character off a whole unit: decode what decodes
            String encoded = line.substring(4).replace("=", "");
            if (encoded.length() % 4 == 1) {
                encoded = encoded.substring(0, encoded.length() - 1);
            }
            byte[] decoded = line.startsWith("b64 ") ? Base64.getDecoder().decode(encoded)
                    : Base64.getUrlDecoder().decode(encoded);
            String text = new String(decoded, StandardCharsets.ISO_8859_1);
            assertThat(text).as(line).doesNotContain(REAL).doesNotContain(REAL.substring(2, REAL.length() - 2));
        }
        assertThat(r.body()).contains(Base64.getEncoder().withoutPadding()
                .encodeToString(ph.getBytes(StandardCharsets.UTF_8)).substring(0, 12));
    }

    @Test
    void jsonAndFormBodiesGetTheRealValueWithTheirLengthRecomputed() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        StringBuilder json = new StringBuilder("{\"pad\":\"");
        while (json.length() < 65_536 - 30) {
            json.append('a');
        }
        json.append("\",\"api_key\":\"").append(ph).append("\",\"pad2\":\"");
        while (json.length() < 200_000) {
            json.append('b');
        }
        json.append("\",\"again\":\"").append(ph).append("\"}");
        Path file = dir.resolve("body.json");
        Files.writeString(file, json.toString());
        List<String> args = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file, url(API, "/v1/chat")));
        CurlResult posted = Curl.run(args, Duration.ofSeconds(30));
        assertThat(posted.httpStatus()).as(posted.stderr()).isEqualTo(200);
        RecordingOrigin.Seen seen = api.requests().get(api.requests().size() - 1);
        String expected = json.toString().replace(ph, REAL);
        assertThat(new String(seen.body(), StandardCharsets.UTF_8)).isEqualTo(expected);
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(expected.length()));

        List<String> form = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "--data", "key=" + ph + "&x=1",
                url(API, "/v1/form")));
        assertThat(Curl.run(form, Duration.ofSeconds(30)).httpStatus()).isEqualTo(200);
        RecordingOrigin.Seen formSeen = api.requests().get(api.requests().size() - 1);
        assertThat(new String(formSeen.body(), StandardCharsets.UTF_8)).isEqualTo("key=" + REAL + "&x=1");
        assertThat(lastAudit("/v1/form").path("credentials").toString()).isEqualTo("[\"llm\"]");

        int before = api.requests().size();
        List<String> foreign = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                "--data-binary", "@" + file, url(OTHER, "/v1/chat")));
        CurlResult refused = Curl.run(foreign, Duration.ofSeconds(30));
        assertThat(refused.httpStatus()).isEqualTo(403);
        assertThat(refused.body()).contains("credential_host_mismatch");
        assertThat(api.requests()).hasSize(before);
    }

    @Test
    void aGzipBodyIsDecodedSwappedAndEncodedAgainOrRefused() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        String json = "{\"model\":\"m\",\"api_key\":\"" + ph + "\"}";
        Path file = dir.resolve("body.json.gz");
        try (var z = new java.util.zip.GZIPOutputStream(Files.newOutputStream(file))) {
            z.write(json.getBytes(StandardCharsets.UTF_8));
        }
        List<String> args = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                "-H", "Content-Encoding: gzip", "--data-binary", "@" + file, url(RAW, "/v1/gz")));
        assertThat(Curl.run(args, Duration.ofSeconds(30)).httpStatus()).isEqualTo(200);
        RecordingOrigin.Seen seen = api.requests().get(api.requests().size() - 1);
        assertThat(seen.header("content-encoding")).isEqualTo("gzip");
        byte[] received = new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(seen.body())).readAllBytes();
        assertThat(new String(received, StandardCharsets.UTF_8)).isEqualTo(json.replace(ph, REAL));
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(seen.body().length));

        int before = api.requests().size();
        args.set(args.size() - 1, url(OTHER, "/v1/gz"));
        CurlResult refused = Curl.run(args, Duration.ofSeconds(30));
        assertThat(refused.httpStatus()).as(refused.body() + " " + sluice.audit()).isEqualTo(403);
        assertThat(api.requests()).hasSize(before);
    }

    @Test
    void anOptionalCredentialThatCannotBeReadAnswers503() {
        CurlResult r = curl("agent", url(API, "/v1/x"), "x-gone: " + placeholders.placeholder("agent", "gone"));
        assertThat(r.httpStatus()).isEqualTo(503);
        assertThat(r.body()).contains("credential_unavailable");
        assertThat(api.requests()).isEmpty();
        assertThat(lastAudit("/v1/x").path("rule").asText()).isEqualTo("credentials.gone");
    }

    @Test
    void aReloadWithACredentialThatCannotBeReadFailsAndTheRunningOneStays() throws Exception {
        String yaml = Files.readString(sluice.dataDir().resolve("policy.yaml"));
        sluice.writePolicy(yaml.replace("optional: true", "optional: false"));
        assertThat(sluice.reloader().reload()).isEqualTo(dev.sluice.proxy.server.PolicyReloader.Result.ERROR);
        CurlResult r = curl("agent", url(API, "/v1/still"), "x-api-key: " + placeholders.placeholder("agent", "llm"));
        assertThat(r.httpStatus()).isEqualTo(200);
        assertThat(api.requests().get(0).header("x-api-key")).isEqualTo(REAL);
    }

    @Test
    void aPlaceholderAnywhereElseIsRefusedAndTheOriginSeesNothing() {
        String ph = placeholders.placeholder("agent", "llm");
        String pct = URLEncoder.encode(ph, StandardCharsets.UTF_8).replace("-", "%2D");
        String basic = Base64.getEncoder().encodeToString(("me:" + ph).getBytes(StandardCharsets.UTF_8));
        Map<String, CurlResult> refused = new java.util.LinkedHashMap<>();
        refused.put("another intercepted host", curl("agent", url(OTHER, "/v1/a"), "Authorization: Bearer " + ph));
        refused.put("a path outside paths", curl("agent", url(API, "/v2/b"), "Authorization: Bearer " + ph));
        refused.put("another extension", curl("other", url(API, "/v1/c"), "Authorization: Bearer " + ph));
        refused.put("a header inject does not list", curl("agent", url(API, "/v1/d"), "Cookie: k=" + ph));
        refused.put("percent-encoded", curl("agent", url(OTHER, "/v1/e?q=" + pct)));
        refused.put("in base64 Basic", curl("agent", url(OTHER, "/v1/f"), "Authorization: Basic " + basic));
        refused.put("plain HTTP", curl("agent", "http://" + PLAIN + ":" + plain.port() + "/v1/g",
                "X-Key: " + ph));
        refused.forEach((what, r) -> {
            assertThat(r.httpStatus()).as(what + ": " + r.stderr()).isEqualTo(403);
            assertThat(r.body()).as(what).contains("credential_host_mismatch").doesNotContain(REAL);
        });
        assertThat(api.requests()).as("the TLS origin saw nothing").isEmpty();
        assertThat(plain.requests()).as("the plain origin saw nothing").isEmpty();
        JsonNode audit = lastAudit("/v2/b");
        assertThat(audit.path("reason").asText()).isEqualTo("credential_host_mismatch");
        assertThat(audit.path("rule").asText()).isEqualTo("credentials.llm");
        // each extension's own placeholder works for it
        CurlResult own = curl("other", url(API, "/v1/h"), "Authorization: Bearer " + placeholders.placeholder("other", "llm"));
        assertThat(own.httpStatus()).isEqualTo(200);
        assertThat(api.requests().get(0).header("authorization")).isEqualTo("Bearer " + REAL);
    }

    @Test
    void gitCloneWithThePlaceholderInTheUrlAuthenticatesWithTheRealToken() throws Exception {
        String ph = placeholders.placeholder("agent", "git");
        Path home = Files.createDirectories(dir.resolve("home"));
        String out = run(home, "git", "-c", "http.proxy=" + proxy("agent"),
                "-c", "http.sslCAInfo=" + sluice.dataDir().resolve("ca.crt.pem"),
                "clone", "-q", "https://x:" + ph + "@" + GIT + ":" + git.port() + "/remote.git", "clone");
        assertThat(Files.readString(home.resolve("clone/README"))).as(out).isEqualTo("hello\n");
        assertThat(git.requests()).anyMatch(s -> s.status() == 200);
        JsonNode audit = lastAudit("/remote.git/info/refs");
        assertThat(audit.toString()).doesNotContain(GIT_REAL);
        assertThat(sluice.audit()).anyMatch(r -> r.path("credentials").toString().equals("[\"git\"]"));
    }

    private CurlResult post(String extension, Path file, String url, String... headers) {
        List<String> args = new ArrayList<>(List.of("-x", proxy(extension), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Expect:"));
        for (String h : headers) {
            args.add("-H");
            args.add(h);
        }
        args.add("--data-binary");
        args.add("@" + file);
        args.add(url);
        return Curl.run(args, Duration.ofSeconds(60));
    }

    /** An origin that compresses its echo of the key although asked for identity: decoded, scrubbed, sent plain. */
    @Test
    void aGzipResponseThatEchoesTheKeyIsDecodedAndScrubbed() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        Path headers = dir.resolve("gz-headers.txt");
        List<String> args = new ArrayList<>(List.of("-x", proxy("agent"), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "--compressed", "-D", headers.toString(),
                "-H", "x-api-key: " + ph, "-H", "X-Echo-Header: x-api-key", "-H", "X-Echo-Coding: gzip",
                url(API, "/v1/echo-gzip")));
        CurlResult r = Curl.run(args, Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        assertThat(api.requests().get(0).header("x-api-key")).as("the origin got the real key").isEqualTo(REAL);
        assertThat(api.requests().get(0).header("accept-encoding")).isEqualTo("identity");
        assertThat(r.body()).isEqualTo("{\"error\":\"bad key " + ph + "\"}");
        assertThat(Files.readString(headers)).doesNotContainIgnoringCase("content-encoding");
    }

    /** A body coded br (or any coding Sluice cannot read) cannot be scrubbed: 502, never the body. */
    @Test
    void aResponseInACodingSluiceCannotReadIsRefusedNotRelayed() {
        String ph = placeholders.placeholder("agent", "llm");
        CurlResult r = curl("agent", url(API, "/v1/echo-br"), "x-api-key: " + ph, "X-Echo-Header: x-api-key",
                "X-Echo-Coding: br");
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(502);
        assertThat(r.body()).contains("response_not_scrubbable").doesNotContain(REAL).doesNotContain("bad key");
        assertThat(api.requests().get(0).header("x-api-key")).isEqualTo(REAL);
        JsonNode audit = lastAudit("/v1/echo-br");
        assertThat(audit.path("reason").asText()).isEqualTo("response_not_scrubbable");
        assertThat(audit.path("rule").asText()).isEqualTo("credentials");
        assertThat(audit.path("error").asText()).contains("br");
        assertThat(audit.toString()).doesNotContain(REAL);
        // a request without an injected credential keeps only the codings Sluice can read in Accept-Encoding
        CurlResult plainGet = curl("agent", url(API, "/v1/ae"), "Accept-Encoding: br, gzip;q=0.5, zstd");
        assertThat(plainGet.httpStatus()).isEqualTo(200);
        assertThat(api.requests().get(1).header("accept-encoding")).isEqualTo("gzip;q=0.5");
    }

    private static String filler(int bytes) {
        StringBuilder b = new StringBuilder(bytes);
        java.util.Random random = new java.util.Random(13);
        while (b.length() < bytes) {
            b.append("line ").append(Long.toHexString(random.nextLong())).append(' ')
                    .append(Long.toString(random.nextLong(), 36)).append('\n');
        }
        b.setLength(bytes);
        return b.toString();
    }

    /**
     * Bodies over limits.max_buffered_body (1 MiB) stream on, watched: a clean one arrives whole; one with a
     * placeholder anywhere (also after the head went upstream) is 403 and the origin never gets a whole request.
     */
    @Test
    void aPlaceholderInABodyTooLargeToHoldIsRefusedAndTheOriginNeverGetsTheRequest() throws Exception {
        String ph = placeholders.placeholder("agent", "llm");
        String clean = filler(1_500_000);
        Path cleanFile = dir.resolve("clean.txt");
        Files.writeString(cleanFile, clean);
        for (String framing : List.of("Transfer-Encoding: chunked", "X-Framing: length")) {
            CurlResult ok = post("agent", cleanFile, url(API, "/v1/big-clean"), framing);
            assertThat(ok.httpStatus()).as(framing + ": " + ok.stderr()).isEqualTo(200);
            RecordingOrigin.Seen seen = api.requests().get(api.requests().size() - 1);
            assertThat(seen.bodyBytes()).isEqualTo(clean.length());
            assertThat(seen.bodySha256()).isEqualTo(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(clean.getBytes(StandardCharsets.ISO_8859_1))));
        }
        int before = api.requests().size();
        Map<String, CurlResult> refused = new java.util.LinkedHashMap<>();
        String pct = URLEncoder.encode(ph, StandardCharsets.UTF_8).replace("-", "%2D");
        String b64 = Base64.getEncoder().encodeToString(("k=" + ph).getBytes(StandardCharsets.UTF_8));
        int[] offsets = {1_300_000, 20_000};
        String[] forms = {ph, pct, b64};
        int n = 0;
        for (int offset : offsets) {
            for (String form : forms) {
                String body = clean.substring(0, offset) + form + clean.substring(offset);
                Path file = dir.resolve("big-" + n++ + ".txt");
                Files.writeString(file, body);
                refused.put(offset + " chunked " + form.substring(0, 8), post("agent", file,
                        url(API, "/v1/big"), "Transfer-Encoding: chunked"));
                refused.put(offset + " length " + form.substring(0, 8), post("agent", file, url(API, "/v1/big")));
            }
        }
        // a gzip body to a host without redaction (so it reaches the phase coded), compressed > 1 MiB
        byte[] random = new byte[1_200_000];
        new java.util.Random(7).nextBytes(random);
        java.io.ByteArrayOutputStream gz = new java.io.ByteArrayOutputStream();
        try (var z = new java.util.zip.GZIPOutputStream(gz)) {
            z.write(random);
            z.write(("{\"k\":\"" + ph + "\"}").getBytes(StandardCharsets.UTF_8));
        }
        Path gzFile = dir.resolve("big.gz");
        Files.write(gzFile, gz.toByteArray());
        refused.put("gzip chunked", post("agent", gzFile, url(RAW, "/v1/big-gz"), "Content-Encoding: gzip",
                "Transfer-Encoding: chunked"));
        refused.put("gzip length", post("agent", gzFile, url(RAW, "/v1/big-gz"), "Content-Encoding: gzip"));
        refused.forEach((what, r) -> {
            assertThat(r.httpStatus()).as(what + ": " + r.stderr()).isEqualTo(403);
            assertThat(r.body()).as(what).contains("credential_host_mismatch");
        });
        assertThat(api.requests()).as("the origin never got a whole request").hasSize(before);
        JsonNode audit = lastAudit("/v1/big-gz");
        assertThat(audit.path("reason").asText()).isEqualTo("credential_host_mismatch");
        assertThat(audit.path("rule").asText()).isEqualTo("credentials.llm");
        assertThat(audit.path("error").asText()).contains("too large to hold");
    }

    /** A request body coded br (Sluice cannot read it, so cannot search it) from an extension with credentials. */
    @Test
    void aRequestBodyInACodingSluiceCannotReadIsRefused() throws Exception {
        Path file = dir.resolve("body.br");
        Files.writeString(file, "{\"k\":\"" + placeholders.placeholder("agent", "llm") + "\"}");
        CurlResult r = post("agent", file, url(RAW, "/v1/br"), "Content-Encoding: br",
                "Content-Type: application/json");
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(415);
        assertThat(r.body()).contains("unsupported_encoding");
        assertThat(api.requests()).isEmpty();
        JsonNode audit = lastAudit("/v1/br");
        assertThat(audit.path("rule").asText()).isEqualTo("credentials");
        assertThat(audit.path("error").asText()).contains("cannot be searched for credential placeholders");
    }

    private String run(Path cwd, String... command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        for (String name : Curl.PROXY_VARIABLES) {
            env.remove(name);
        }
        env.remove("no_proxy");
        env.remove("NO_PROXY");
        env.put("HOME", dir.toString());
        env.put("GIT_CONFIG_NOSYSTEM", "1");
        env.put("GIT_TERMINAL_PROMPT", "0");
        env.remove("GIT_SSL_CAINFO");
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ": " + output).isZero();
        return output;
    }
}
