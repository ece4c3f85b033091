package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.capture.CaptureStore;
import dev.sluice.proxy.cli.SluiceCli;
import dev.sluice.proxy.credential.PlaceholderKey;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Prompt capture (policy {@code capture}) over real interception: curl through Sluice to a loopback TLS
 * origin that records what it received; the capture file, its mode, the audit record and what
 * {@code sluice audit show} and {@code tail --captured} print.
 */
class CaptureTest {

    private static final String API = "api.llm.test";
    /** Inspected, not under capture. */
    private static final String OTHER = "other.llm.test";
    private static final String REAL = "sk-real-0123456789abcdefghij";
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private void start(String capture) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("tls"), API, OTHER);
        origin = RecordingOrigin.tls(tls, false);
        Path key = dir.resolve("llm.key");
        Files.writeString(key, REAL + "\n");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: %1$s, ports: [%3$d] }
                      - { host: %2$s, ports: [%3$d] }
                    credentials: [llm]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts: { %1$s: 127.0.0.1, %2$s: 127.0.0.1 }
                inspect:
                  %1$s: { redact: true }
                  %2$s: { redact: true }
                tls:
                  extra_trust: ["%4$s"]
                credentials:
                  llm:
                    source: { file: "%5$s" }
                    inject: { hosts: [%1$s], ports: [%3$d], header: x-api-key, body: true }
                %6$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(API, OTHER, origin.port(), tls.caPem().toAbsolutePath(), key, capture));
    }

    private static String fakeAnthropicKey() {
        Random random = new Random(11);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        StringBuilder k = new StringBuilder("sk-ant-").append("api03-");
        for (int i = 0; i < 93; i++) {
            k.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return k.append("AA").toString();
    }

    private CurlResult post(String host, String path, String body, String... headers) throws Exception {
        Path file = Files.writeString(dir.resolve("body-" + System.nanoTime() + ".json"), body);
        List<String> args = new ArrayList<>(List.of("-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json"));
        for (String h : headers) {
            args.add("-H");
            args.add(h);
        }
        args.addAll(List.of("--data-binary", "@" + file, "https://" + host + ":" + origin.port() + path));
        return Curl.run(args, Duration.ofSeconds(30));
    }

    private JsonNode record(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText("").equals(path)).findFirst().orElse(null), r -> r != null);
    }

    private JsonNode capture(String eventId) throws Exception {
        Path file = CaptureStore.file(sluice.dataDir(), eventId);
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.exists(file));
        return JSON.readTree(Files.readAllBytes(file));
    }

    private record Cli(int code, String out, String err) {
    }

    private Cli cli(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--policy", sluice.dataDir().resolve("policy.yaml").toString(),
                "--data-dir", sluice.dataDir().toString()));
        int code = SluiceCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), all.toArray(String[]::new));
        return new Cli(code, out.toString(), err.toString());
    }

    @Test
    void theCaptureHoldsExactlyTheRedactedBodyAndAuditShowAndTailPrintIt() throws Exception {
        start("capture: { hosts: [" + API + "], sample: 1.0 }");
        String key = fakeAnthropicKey();
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"my key is " + key + " ok\"}]}";
        CurlResult r = post(API, "/v1/messages", body);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        RecordingOrigin.Seen seen = origin.requests().get(0);
        String sent = new String(seen.body(), StandardCharsets.UTF_8);
        assertThat(sent).doesNotContain(key).contains("[REDACTED:anthropic-api-key]");

        JsonNode record = record("/v1/messages");
        assertThat(record.path("capture").asBoolean()).as(record.toString()).isTrue();
        String id = record.path("event.id").asText();
        JsonNode capture = capture(id);
        assertThat(capture.path("event.id").asText()).isEqualTo(id);
        assertThat(capture.path("request").path("body").asText()).isEqualTo(sent);
        assertThat(capture.toString()).doesNotContain(key);
        assertThat(capture.path("request").path("truncated").asBoolean()).isFalse();
        assertThat(capture.path("response").path("status_code").asInt()).isEqualTo(200);
        assertThat(capture.path("response").path("body").asText()).isEqualTo(r.body()).startsWith("ok ");
        assertThat(capture.path("response").path("complete").asBoolean()).isTrue();

        Path file = CaptureStore.file(sluice.dataDir(), id);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())))
                .isEqualTo("rwx------");

        // an inspected host that is not under capture: no capture, no mark
        assertThat(post(OTHER, "/v1/other", "{\"a\":1}").httpStatus()).isEqualTo(200);
        assertThat(record("/v1/other").has("capture")).isFalse();

        Cli show = cli("audit", "show", id);
        assertThat(show.code()).as(show.err()).isZero();
        assertThat(show.out()).contains("\"event.id\" : \"" + id + "\"").contains(sent).contains(r.body())
                .contains("== request").contains("== response 200").doesNotContain(key);

        Cli tail = cli("audit", "tail", "--captured");
        assertThat(tail.code()).as(tail.err()).isZero();
        assertThat(tail.out()).contains(id).contains(API).doesNotContain(OTHER);
        assertThat(tail.out().lines().count()).isEqualTo(2); // header and the one captured exchange
        Cli tailJson = cli("audit", "tail", "--captured", "--format", "json");
        assertThat(tailJson.out().lines().toList()).hasSize(1);
        assertThat(JSON.readTree(tailJson.out()).path("event.id").asText()).isEqualTo(id);

        Cli unknown = cli("audit", "show", "0123456789abcdef");
        assertThat(unknown.code()).isEqualTo(1);
        assertThat(unknown.err()).contains("no audit record with event.id 0123456789abcdef");
        Cli notAnId = cli("audit", "show", "nope");
        assertThat(notAnId.code()).isEqualTo(2);
        assertThat(notAnId.err()).contains("EVENT_ID: nope (expected: 16 hex characters");
        String otherId = record("/v1/other").path("event.id").asText();
        Cli notCaptured = cli("audit", "show", otherId);
        assertThat(notCaptured.code()).isZero();
        assertThat(notCaptured.out()).contains("== not captured");

        assertThat(sluice.server().metrics().scrape()).contains("sluice_captures_total{result=\"written\"} 1.0");
        // a capture that is gone: show still prints the record, says so, exit 1
        Files.delete(file);
        Cli gone = cli("audit", "show", id);
        assertThat(gone.code()).isEqualTo(1);
        assertThat(gone.out()).contains(id);
        assertThat(gone.err()).contains("no capture file");
    }

    @Test
    void withCredentialInjectionTheCaptureHoldsThePlaceholderNeverTheRealValue() throws Exception {
        start("capture: { hosts: [" + API + "] }");
        String ph = PlaceholderKey.loadOrCreate(sluice.dataDir()).placeholder("default", "llm");
        String body = "{\"api_key\":\"" + ph + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
        CurlResult r = post(API, "/v1/inject", body, "x-api-key: " + ph);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        RecordingOrigin.Seen seen = origin.requests().get(0);
        assertThat(seen.header("x-api-key")).isEqualTo(REAL);
        assertThat(new String(seen.body(), StandardCharsets.UTF_8)).isEqualTo(body.replace(ph, REAL));

        JsonNode record = record("/v1/inject");
        assertThat(record.path("credentials").toString()).isEqualTo("[\"llm\"]");
        JsonNode capture = capture(record.path("event.id").asText());
        assertThat(capture.path("request").path("body").asText()).isEqualTo(body);
        String file = Files.readString(CaptureStore.file(sluice.dataDir(), record.path("event.id").asText()));
        assertThat(file).doesNotContain(REAL).contains(ph);
        Cli show = cli("audit", "show", record.path("event.id").asText());
        assertThat(show.out()).doesNotContain(REAL).contains(ph);
    }

    @Test
    void aResponseThatEchoesTheInjectedKeyIsCapturedWithThePlaceholderInstead() throws Exception {
        start("capture: { hosts: [" + API + "] }");
        String ph = PlaceholderKey.loadOrCreate(sluice.dataDir()).placeholder("default", "llm");
        // the origin echoes the x-api-key it received (the real value) in a header and an event stream:
        // raw, split across chunks, JSON-escaped and in base64
        CurlResult r = post(API, "/v1/echo", "{\"q\":1}", "x-api-key: " + ph, "X-Echo-Header: x-api-key");
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        assertThat(r.body()).doesNotContain(REAL).contains(ph);

        JsonNode record = record("/v1/echo");
        String file = Files.readString(CaptureStore.file(sluice.dataDir(), record.path("event.id").asText()));
        String realBase64 = java.util.Base64.getEncoder().withoutPadding()
                .encodeToString(REAL.getBytes(StandardCharsets.UTF_8));
        assertThat(file).doesNotContain(REAL).doesNotContain(realBase64).contains(ph);
        assertThat(capture(record.path("event.id").asText()).path("response").path("events").toString()).contains(ph);
    }

    @Test
    void sampleZeroCapturesNothing() throws Exception {
        start("capture: { hosts: [" + API + "], sample: 0 }");
        for (int i = 0; i < 5; i++) {
            assertThat(post(API, "/v1/none/" + i, "{\"n\":" + i + "}").httpStatus()).isEqualTo(200);
        }
        for (int i = 0; i < 5; i++) {
            assertThat(record("/v1/none/" + i).has("capture")).isFalse();
        }
        Path captures = CaptureStore.directory(sluice.dataDir());
        assertThat(!Files.exists(captures) || Files.list(captures).findAny().isEmpty()).isTrue();
        Cli tail = cli("audit", "tail", "--captured");
        assertThat(tail.out().lines().count()).isEqualTo(1);
    }

    @Test
    void maxBodyBytesTruncatesWithAMarker() throws Exception {
        start("capture: { hosts: [" + API + "], max_body_bytes: 1KiB }");
        StringBuilder text = new StringBuilder();
        while (text.length() < 5000) {
            text.append("lorem ipsum ");
        }
        String body = "{\"content\":\"" + text + "\"}";
        assertThat(post(API, "/v1/long", body).httpStatus()).isEqualTo(200);
        String id = record("/v1/long").path("event.id").asText();
        JsonNode request = capture(id).path("request");
        assertThat(request.path("truncated").asBoolean()).isTrue();
        assertThat(request.path("body_bytes").asInt()).isEqualTo(1024);
        assertThat(request.path("body").asText()).isEqualTo(body.substring(0, 1024));
        assertThat(origin.requests().get(0).bodyBytes()).as("the origin gets the whole body").isEqualTo(body.length());
        Cli show = cli("audit", "show", id);
        assertThat(show.out()).contains("truncated at capture.max_body_bytes").contains("[... truncated]");
    }

    @Test
    void aCaptureThatCannotBeWrittenIsCountedAndTheExchangeGoesThrough() throws Exception {
        start("capture: { hosts: [" + API + "] }");
        Files.writeString(CaptureStore.directory(sluice.dataDir()), "in the way"); // captures/ cannot be made
        CurlResult r = post(API, "/v1/unwritable", "{\"a\":1}");
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        assertThat(origin.requests()).hasSize(1);
        String id = record("/v1/unwritable").path("event.id").asText();
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.server().metrics().scrape()
                .contains("sluice_captures_total{result=\"failed\"} 1.0"));
        Cli show = cli("audit", "show", id);
        assertThat(show.code()).isEqualTo(1);
        assertThat(show.err()).contains("capture file").contains(id);
    }

    @Test
    void anEventStreamResponseIsReassembledIntoItsEventsAndText() throws Exception {
        start("capture: { hosts: [" + API + "] }");
        CurlResult r = post(API, "/v1/stream", "{\"stream\":true}", "X-Echo-Header: X-Said", "X-Said: hello/world");
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        JsonNode response = capture(record("/v1/stream").path("event.id").asText()).path("response");
        assertThat(response.path("content_type").asText()).isEqualTo("text/event-stream");
        assertThat(response.path("body").asText()).isEqualTo(r.body());
        assertThat(response.path("events").size()).isEqualTo(2);
        assertThat(response.path("events").get(0).path("data").asText()).isEqualTo("{\"k\":\"hello/world\"}");
    }

    @Test
    void aGzipEventStreamIsDecodedBeforeItIsReassembled() throws Exception {
        String host = "gz.llm.test";
        try (dev.sluice.proxy.testing.Origins gz = dev.sluice.proxy.testing.Origins.start(
                TestTls.create(dir.resolve("gz-tls"), host))) {
            String events = "event: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \"}}\n\n"
                    + "event: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n";
            java.io.ByteArrayOutputStream packed = new java.io.ByteArrayOutputStream();
            try (java.util.zip.GZIPOutputStream out = new java.util.zip.GZIPOutputStream(packed)) {
                out.write(events.getBytes(StandardCharsets.UTF_8));
            }
            gz.server().stubFor(com.github.tomakehurst.wiremock.client.WireMock.post("/v1/gz").willReturn(
                    com.github.tomakehurst.wiremock.client.WireMock.aResponse().withStatus(200)
                            .withHeader("Content-Type", "text/event-stream").withHeader("Content-Encoding", "gzip")
                            .withBody(packed.toByteArray())));
            sluice = SluiceFixture.start("""
                    version: 1
                    extensions:
                      default:
                        allow: [{ host: %1$s, ports: [%2$d] }]
                    network:
                      allow_private: ["127.0.0.1/32"]
                      hosts: { %1$s: 127.0.0.1 }
                    inspect:
                      %1$s: {}
                    tls:
                      extra_trust: ["%3$s"]
                    capture: { hosts: [%1$s] }
                    listen:
                      proxy: 127.0.0.1:0
                    """.formatted(host, gz.httpsPort(), gz.caPem().toAbsolutePath()));
            Path file = Files.writeString(dir.resolve("gz.json"), "{\"stream\":true}");
            CurlResult r = Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert",
                    sluice.dataDir().resolve("ca.crt.pem").toString(), "--compressed", "-H",
                    "Content-Type: application/json", "--data-binary", "@" + file,
                    "https://" + host + ":" + gz.httpsPort() + "/v1/gz"), Duration.ofSeconds(30));
            assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
            assertThat(r.body()).isEqualTo(events);
            JsonNode response = capture(record("/v1/gz").path("event.id").asText()).path("response");
            assertThat(response.path("content_encoding").asText()).isEqualTo("gzip");
            assertThat(response.path("body").asText()).isEqualTo(events);
            assertThat(response.path("events").size()).isEqualTo(2);
            assertThat(response.path("text").asText()).isEqualTo("Hi there");
            Cli show = cli("audit", "show", record("/v1/gz").path("event.id").asText());
            assertThat(show.out()).contains("content-encoding gzip undone").contains("Hi there");
        }
    }

    @Test
    void anHttp2StreamIsCapturedLikeAnHttp11Exchange() throws Exception {
        start("capture: { hosts: [" + API + "] }");
        Path file = Files.writeString(dir.resolve("h2.json"), "{\"content\":\"over h2\"}");
        CurlResult r = Curl.run(List.of("--http2", "-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                "--data-binary", "@" + file, "https://" + API + ":" + origin.port() + "/v1/h2"), Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(200);
        JsonNode record = record("/v1/h2");
        assertThat(record.path("capture").asBoolean()).as(record.toString()).isTrue();
        JsonNode capture = capture(record.path("event.id").asText());
        assertThat(capture.path("request").path("body").asText()).isEqualTo("{\"content\":\"over h2\"}");
        assertThat(capture.path("response").path("body").asText()).isEqualTo(r.body());
    }

    @Test
    void aPromptBlockedByARedFlagIsCapturedRedactedWithItsRefusalAndAuditShowPrintsIt() throws Exception {
        start("capture: { hosts: [" + API + "] }\nred_flags:\n  rules: [{ id: template_injection, action: block }]");
        String key = fakeAnthropicKey();
        String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"key " + key
                + " and {{config.__class__.__init__.__globals__}}\"}]}";
        CurlResult r = post(API, "/v1/flagged", body);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        assertThat(r.body()).contains("red_flag");
        assertThat(origin.requests()).as("nothing went upstream").isEmpty();

        JsonNode record = record("/v1/flagged");
        assertThat(record.path("reason").asText()).isEqualTo("red_flag");
        assertThat(record.path("capture").asBoolean()).as(record.toString()).isTrue();
        String id = record.path("event.id").asText();
        JsonNode capture = capture(id);
        String kept = capture.path("request").path("body").asText();
        assertThat(kept).isEqualTo(body.replace(key, "[REDACTED:anthropic-api-key]"));
        assertThat(capture.has("response")).isFalse();
        JsonNode refusal = capture.path("refusal");
        assertThat(refusal.path("status_code").asInt()).as(capture.toString()).isEqualTo(403);
        assertThat(refusal.path("reason").asText()).isEqualTo("red_flag");
        assertThat(refusal.path("rule").asText()).isEqualTo("red_flags.template_injection");
        assertThat(Files.readString(CaptureStore.file(sluice.dataDir(), id))).doesNotContain(key);

        Cli show = cli("audit", "show", id);
        assertThat(show.code()).as(show.err()).isZero();
        assertThat(show.out()).contains(kept).contains("== refused by Sluice 403 red_flag (rule red_flags.template_injection)")
                .doesNotContain(key).doesNotContain("== response");
        Cli tail = cli("audit", "tail", "--captured");
        assertThat(tail.out()).contains(id);
    }

    @Test
    void aRequestRefusedForACredentialIsCapturedWithWhatRedactWouldHaveSent() throws Exception {
        start("capture: { hosts: [" + API + "] }\nredaction: { action: block }");
        String key = fakeAnthropicKey();
        String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"my key is " + key + " ok\"}]}";
        CurlResult r = post(API, "/v1/blocked", body);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        assertThat(origin.requests()).isEmpty();
        JsonNode record = record("/v1/blocked");
        assertThat(record.path("reason").asText()).isEqualTo("credential_detected");
        assertThat(record.path("capture").asBoolean()).as(record.toString()).isTrue();
        String id = record.path("event.id").asText();
        JsonNode capture = capture(id);
        assertThat(capture.path("request").path("body").asText())
                .isEqualTo(body.replace(key, "[REDACTED:anthropic-api-key]"));
        assertThat(capture.path("refusal").path("status_code").asInt()).isEqualTo(403);
        assertThat(capture.path("refusal").path("reason").asText()).isEqualTo("credential_detected");
        assertThat(Files.readString(CaptureStore.file(sluice.dataDir(), id))).doesNotContain(key);
        // a credential in a header is refused before the body is read: captured without a body
        CurlResult header = post(API, "/v1/header", "{\"q\":1}", "X-Note: " + key);
        assertThat(header.httpStatus()).as(header.stderr()).isEqualTo(403);
        JsonNode headerCapture = capture(record("/v1/header").path("event.id").asText());
        assertThat(headerCapture.path("request").path("body_bytes").asInt()).isZero();
        assertThat(headerCapture.path("request").path("note").asText()).contains("not kept");
        assertThat(headerCapture.path("refusal").path("reason").asText()).isEqualTo("credential_detected");
        assertThat(headerCapture.toString()).doesNotContain(key);
    }

    @Test
    void aRequestOverTheTokenBudgetIsCapturedWithItsRefusalAndWithoutItsBody() throws Exception {
        String host = "budget.llm.test";
        try (dev.sluice.proxy.testing.Origins llm = dev.sluice.proxy.testing.Origins.start(
                TestTls.create(dir.resolve("budget-tls"), host))) {
            llm.server().stubFor(com.github.tomakehurst.wiremock.client.WireMock.post("/v1/messages").willReturn(
                    com.github.tomakehurst.wiremock.client.WireMock.aResponse().withStatus(200)
                            .withHeader("Content-Type", "application/json")
                            .withBody("{\"model\":\"m-1\",\"usage\":{\"input_tokens\":7,\"output_tokens\":5}}")));
            sluice = SluiceFixture.start("""
                    version: 1
                    extensions:
                      default:
                        allow: [{ host: %1$s, ports: [%2$d] }]
                    network:
                      allow_private: ["127.0.0.1/32"]
                      hosts: { %1$s: 127.0.0.1 }
                    inspect:
                      %1$s: { redact: true }
                    tls:
                      extra_trust: ["%3$s"]
                    limits:
                      token_budget: { tokens: 10, window: 1h }
                    capture: { hosts: [%1$s] }
                    listen:
                      proxy: 127.0.0.1:0
                    """.formatted(host, llm.httpsPort(), llm.caPem().toAbsolutePath()));
            List<Integer> statuses = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                Path file = Files.writeString(dir.resolve("budget-" + i + ".json"), "{\"content\":\"ask " + i + "\"}");
                statuses.add(Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert",
                        sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                        "--data-binary", "@" + file, "https://" + host + ":" + llm.httpsPort() + "/v1/messages"),
                        Duration.ofSeconds(30)).httpStatus());
            }
            assertThat(statuses).containsExactly(200, 429);
            JsonNode refused = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                    .filter(r -> "token_budget".equals(r.path("reason").asText())).findFirst().orElse(null), r -> r != null);
            assertThat(refused.path("capture").asBoolean()).as(refused.toString()).isTrue();
            JsonNode capture = capture(refused.path("event.id").asText());
            assertThat(capture.path("refusal").path("status_code").asInt()).isEqualTo(429);
            assertThat(capture.path("refusal").path("reason").asText()).isEqualTo("token_budget");
            assertThat(capture.path("request").path("body_bytes").asInt()).as("refused before redaction read it").isZero();
            assertThat(capture.path("request").path("note").asText()).contains("not kept");
        }
    }

    @Test
    void aRefusalOfTheCredentialPhaseAfterTheCaptureIsReadFromTheRecord() throws Exception {
        start("capture: { hosts: [" + API + ", " + OTHER + "] }");
        String ph = PlaceholderKey.loadOrCreate(sluice.dataDir()).placeholder("default", "llm");
        String body = "{\"api_key\":\"" + ph + "\"}";
        CurlResult r = post(OTHER, "/v1/elsewhere", body);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        JsonNode record = record("/v1/elsewhere");
        assertThat(record.path("reason").asText()).isEqualTo("credential_host_mismatch");
        assertThat(record.path("capture").asBoolean()).isTrue();
        JsonNode capture = capture(record.path("event.id").asText());
        assertThat(capture.path("request").path("body").asText()).isEqualTo(body);
        assertThat(capture.path("refusal").path("status_code").asInt()).as(capture.toString()).isEqualTo(403);
        assertThat(capture.path("refusal").path("reason").asText()).isEqualTo("credential_host_mismatch");
        assertThat(capture.toString()).doesNotContain(REAL);
    }

    @Test
    void aRedFlagInALaterChunkOfAStreamedBodyIsCapturedWithWhatWentUpstreamBeforeIt() throws Exception {
        start("capture: { hosts: [" + API + "] }\nlimits: { max_buffered_body: 4KiB }\n"
                + "red_flags:\n  rules: [{ id: template_injection, action: block }]");
        StringBuilder text = new StringBuilder();
        while (text.length() < 200_000) {
            text.append("plain words of a long prompt ");
        }
        String body = "{\"content\":\"" + text + " {{config.__class__.__init__.__globals__}}\"}";
        CurlResult r = post(API, "/v1/streamed", body);
        JsonNode record = record("/v1/streamed");
        assertThat(record.path("reason").asText()).as(record.toString()).isEqualTo("red_flag");
        assertThat(record.path("capture").asBoolean()).isTrue();
        JsonNode capture = capture(record.path("event.id").asText());
        assertThat(capture.path("refusal").path("status_code").asInt()).as(r.stderr()).isEqualTo(403);
        assertThat(capture.path("refusal").path("reason").asText()).isEqualTo("red_flag");
        String kept = capture.path("request").path("body").asText();
        assertThat(kept).isNotEmpty();
        assertThat(body).startsWith(kept);
        assertThat(kept).doesNotContain("{{config");
        assertThat(capture.has("response")).isFalse();
    }

    @Test
    void aRedFlagRefusalOfAnHttp2StreamIsCapturedToo() throws Exception {
        start("capture: { hosts: [" + API + "] }\nred_flags:\n  rules: [{ id: template_injection, action: block }]");
        String body = "{\"content\":\"over h2 {{config.__class__.__init__.__globals__}}\"}";
        Path file = Files.writeString(dir.resolve("h2-flag.json"), body);
        CurlResult r = Curl.run(List.of("--http2", "-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Content-Type: application/json",
                "--data-binary", "@" + file, "https://" + API + ":" + origin.port() + "/v1/h2-flag"), Duration.ofSeconds(30));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        JsonNode record = record("/v1/h2-flag");
        assertThat(record.path("capture").asBoolean()).as(record.toString()).isTrue();
        JsonNode capture = capture(record.path("event.id").asText());
        assertThat(capture.path("request").path("body").asText()).isEqualTo(body);
        assertThat(capture.path("refusal").path("reason").asText()).isEqualTo("red_flag");
        assertThat(origin.requests()).isEmpty();
    }
}
