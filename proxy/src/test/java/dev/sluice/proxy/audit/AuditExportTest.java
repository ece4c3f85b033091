package dev.sluice.proxy.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.proxy.testing.OtlpReceiver;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.rules.policy.AuditSettings;
import io.opentelemetry.proto.logs.v1.SeverityNumber;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The audit export as an operator runs it: Sluice with an OTLP endpoint (a receiver in this test that
 * decodes the protobuf), real requests through the proxy, and every record of the hash-chained file
 * arriving exactly once as an OpenTelemetry log record; failures counted while the file keeps everything.
 */
class AuditExportTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private OtlpReceiver receiver;
    private RecordingOrigin origin;
    private SluiceFixture sluice;
    private HttpClient client;

    @BeforeEach
    void start() throws Exception {
        receiver = new OtlpReceiver();
        origin = new RecordingOrigin();
    }

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
        receiver.close();
    }

    private void startSluice(String audit) throws Exception {
        String policy = """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                %s""".formatted(origin.port(), audit);
        sluice = SluiceFixture.start(policy, Map.of(
                "otel.exporter.otlp.logs.endpoint", receiver.logsEndpoint(),
                "otel.blrp.schedule.delay", "100",
                "otel.service.name", "sluice-test"));
        client = HttpClient.newBuilder().proxy(ProxySelector.of(sluice.address()))
                .connectTimeout(Duration.ofSeconds(5)).build();
    }

    private int get(String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    private void connect() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            raw.send("CONNECT origin.test:" + origin.port() + " HTTP/1.1\r\nHost: origin.test:" + origin.port() + "\r\n\r\n");
            assertThat(raw.read().status()).isEqualTo(200);
        }
    }

    /** Sends 30 allowed and 30 denied requests and one CONNECT tunnel; returns the expected record count. */
    private int traffic() throws Exception {
        for (int i = 0; i < 30; i++) {
            assertThat(get("http://origin.test:" + origin.port() + "/ok/" + i)).isEqualTo(200);
            assertThat(get("http://denied-" + i + ".test/x")).isEqualTo(403);
        }
        connect();
        return 61;
    }

    @Test
    void everyRecordOfTheFileArrivesExactlyOnceAsAnOtelLogRecord() throws Exception {
        startSluice("");
        int expected = traffic();
        await().atMost(Duration.ofSeconds(20)).until(() -> sluice.audit().size() == expected);
        await().atMost(Duration.ofSeconds(20)).until(() -> receiver.records().size() >= expected);
        assertThat(scrape()).contains("sluice_audit_exported_total{sink=\"otlp\"} " + expected + ".0");
        sluice.stop();

        List<JsonNode> file = sluice.audit();
        List<OtlpReceiver.Received> got = receiver.records();
        assertThat(got).hasSize(expected);
        Map<String, JsonNode> byId = file.stream().collect(Collectors.toMap(r -> r.get("event.id").asText(), r -> r));
        assertThat(got).extracting(r -> r.attribute("event.id")).doesNotHaveDuplicates()
                .containsExactlyInAnyOrderElementsOf(byId.keySet());
        for (OtlpReceiver.Received r : got) {
            JsonNode line = byId.get(r.attribute("event.id"));
            ObjectNode withoutHash = line.deepCopy();
            withoutHash.remove("prev_hash");
            assertThat(JSON.readTree(r.body())).as("body is the file's record").isEqualTo(withoutHash);
            assertThat(r.attribute("decision")).isEqualTo(line.get("decision").asText());
            assertThat(r.attribute("server.address")).isEqualTo(line.get("server.address").asText());
            boolean denied = line.get("decision").asText().equals("deny");
            assertThat(r.record().getSeverityNumber()).isEqualTo(denied ? SeverityNumber.SEVERITY_NUMBER_WARN
                    : SeverityNumber.SEVERITY_NUMBER_INFO);
            assertThat(r.record().getEventName()).isEqualTo(AuditExport.EVENT_NAME);
            Instant time = Instant.parse(line.get("time").asText());
            assertThat(TimeUnit.NANOSECONDS.toMillis(r.record().getTimeUnixNano())).isEqualTo(time.toEpochMilli());
            assertThat(r.scope()).isEqualTo(AuditExport.SCOPE);
            assertThat(r.resource()).containsEntry("service.name", "sluice-test");
        }
        assertThat(receiver.records()).hasSize(expected);
    }

    @Test
    void ocsfFormatMapsRequestsToHttpActivityAndTunnelsToNetworkActivity() throws Exception {
        startSluice("audit:\n  format: ocsf\n");
        int expected = traffic();
        await().atMost(Duration.ofSeconds(20)).until(() -> receiver.records().size() >= expected);
        sluice.stop();
        Map<String, JsonNode> byId = sluice.audit().stream()
                .collect(Collectors.toMap(r -> r.get("event.id").asText(), r -> r));
        assertThat(receiver.records()).hasSize(expected);
        for (OtlpReceiver.Received r : receiver.records()) {
            JsonNode ocsf = JSON.readTree(r.body());
            JsonNode line = byId.get(ocsf.get("metadata").get("uid").asText());
            assertThat(line).as("metadata.uid is the record's event.id").isNotNull();
            String method = line.get("http.request.method").asText();
            boolean denied = line.get("decision").asText().equals("deny");
            if (method.equals("CONNECT")) {
                assertThat(ocsf.get("class_uid").asInt()).isEqualTo(4001);
                assertThat(ocsf.get("activity_id").asInt()).isEqualTo(2);
                assertThat(ocsf.get("type_uid").asLong()).isEqualTo(400102);
            } else {
                assertThat(ocsf.get("class_uid").asInt()).isEqualTo(4002);
                assertThat(ocsf.get("activity_id").asInt()).isEqualTo(3);
                assertThat(ocsf.get("type_uid").asLong()).isEqualTo(400203);
                assertThat(ocsf.at("/http_request/http_method").asText()).isEqualTo("GET");
                assertThat(ocsf.at("/http_request/url/path").asText()).isEqualTo(line.get("url.path").asText());
                assertThat(ocsf.at("/http_response/code").asInt()).isEqualTo(denied ? 403 : 200);
            }
            assertThat(ocsf.get("action_id").asInt()).isEqualTo(denied ? 2 : 1);
            assertThat(ocsf.get("status_detail").asText()).isEqualTo(line.get("reason").asText());
            assertThat(ocsf.at("/dst_endpoint/hostname").asText()).isEqualTo(line.get("server.address").asText());
            assertThat(ocsf.at("/src_endpoint/ip").asText()).isEqualTo("127.0.0.1");
            assertThat(ocsf.at("/actor/app_name").asText()).isEqualTo("default");
            assertThat(ocsf.get("time").asLong()).isEqualTo(Instant.parse(line.get("time").asText()).toEpochMilli());
            assertThat(ocsf.at("/traffic/bytes_out").asLong()).isEqualTo(line.get("bytes.sent").asLong());
        }
    }

    @Test
    void aRefusingCollectorIsCountedAndLoggedWhileRequestsAndTheFileCarryOn() throws Exception {
        startSluice("");
        receiver.refuse(400);
        for (int i = 0; i < 10; i++) {
            assertThat(get("http://refused-" + i + ".test/")).isEqualTo(403);
        }
        await().atMost(Duration.ofSeconds(20))
                .until(() -> scrape().contains("sluice_audit_export_failures_total{reason=\"export_failed\"} 10.0"));
        assertThat(sluice.audit()).hasSize(10);
        assertThat(receiver.records()).isEmpty();
        assertThat(receiver.requests()).isPositive();

        receiver.refuse(0);
        for (int i = 0; i < 5; i++) {
            assertThat(get("http://later-" + i + ".test/")).isEqualTo(403);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> receiver.records().size() == 5);
        assertThat(receiver.records()).extracting(r -> r.attribute("server.address"))
                .allMatch(host -> host.startsWith("later-"));
        assertThat(scrape()).contains("sluice_audit_export_failures_total{reason=\"export_failed\"} 10.0")
                .contains("sluice_audit_export_failures_total{reason=\"queue_full\"} 0.0");
    }

    /** A stuck standard output never blocks the writer (an event loop): the queue is bounded, drops are counted. */
    @Test
    void aStuckOutputNeverBlocksTheCallerAndEveryRecordIsWrittenOrCounted() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        OutputStream stuck = new OutputStream() {
            @Override
            public void write(int b) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                try {
                    release.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
                synchronized (sink) {
                    sink.write(b, off, len);
                }
            }
        };
        AuditExport export = AuditExport.start(new AuditSettings(Path.of("audit.jsonl"), 1 << 20, 1,
                AuditSettings.Format.SLUICE, true), Map.of(), stuck);
        int total = AuditExport.QUEUE_CAPACITY + 2_000;
        // The output stays stuck until `release` below: the writes can only complete if none of them waits
        // for it (a blocking write would hang here, and the guard turns that into a failure).
        CompletableFuture<Void> writes = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < total; i++) {
                export.write(record("r" + i));
            }
        });
        assertThat(writes).as("%d writes against a stuck output", total).succeedsWithin(Duration.ofSeconds(60));
        assertThat(release.getCount()).as("the output was stuck throughout").isEqualTo(1);
        long dropped = export.failures(AuditExport.Failure.QUEUE_FULL);
        assertThat(dropped).isBetween(2_000L - 512, 2_000L);
        release.countDown();
        export.close();
        List<String> lines = sink.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines.size() + dropped).isEqualTo(total);
        assertThat(export.writtenStdout()).isEqualTo(lines.size());
        assertThat(JSON.readTree(lines.get(0)).get("event.id").asText()).isEqualTo("r0");
    }

    @Test
    void stdoutCarriesOneLinePerRecordInTheChosenFormat() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        AuditExport export = AuditExport.start(new AuditSettings(Path.of("audit.jsonl"), 1 << 20, 1,
                AuditSettings.Format.OCSF, true), Map.of(), out);
        export.write(record("a"));
        export.write(record("b"));
        export.close();
        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).hasSize(2);
        assertThat(JSON.readTree(lines.get(1)).at("/metadata/uid").asText()).isEqualTo("b");
        assertThat(JSON.readTree(lines.get(1)).get("class_uid").asInt()).isEqualTo(4002);
        assertThat(AuditExport.start(AuditSettings.DEFAULT, Map.of(), out)).as("nothing asked for").isNull();
    }

    @Test
    void otlpIsOnOnlyWithAnEndpointAndNotDisabled() {
        assertThat(AuditExport.otlpEnabled(Map.of(), Map.of())).isFalse();
        assertThat(AuditExport.otlpEnabled(Map.of(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"))).isTrue();
        assertThat(AuditExport.otlpEnabled(Map.of(), Map.of("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:4318/v1/logs"))).isTrue();
        assertThat(AuditExport.otlpEnabled(Map.of(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318",
                "OTEL_LOGS_EXPORTER", "none"))).isFalse();
        assertThat(AuditExport.otlpEnabled(Map.of(), Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318",
                "OTEL_SDK_DISABLED", "true"))).isFalse();
    }

    /** A captured LLM exchange with red flags of a log and an alert rule (the alert one the strongest). */
    private static AuditRecord llmRecord(String id, String reason, String error) {
        return new AuditRecord(Instant.parse("2026-12-01T10:00:00.123Z"), id, "default", "127.0.0.1", 40000,
                "explicit", "POST", "https", "api.llm.test", 443, "/v1/messages", "intercept", "api.llm.test",
                reason == null ? "allow" : "deny", reason == null ? "allowlisted" : reason, "extensions.default.allow[0]",
                "127.0.0.1", reason == null ? 200 : 403, 10, 20, 3, null, null, error, null, null, null, null, null,
                null, null, null, "claude-test-1", 12L, 34L,
                Map.of("credential_path", 1L, "encoded_shell", 2L), true, null, null);
    }

    private static dev.sluice.rules.redflag.RedFlagSettings redFlagRules() {
        return new dev.sluice.rules.redflag.RedFlagSettings(List.of(
                new dev.sluice.rules.redflag.RedFlagRule(dev.sluice.rules.redflag.BuiltinRedFlags.credentialPath(),
                        dev.sluice.rules.redflag.RedFlagAction.LOG, dev.sluice.rules.redflag.RedFlagDirection.BOTH),
                new dev.sluice.rules.redflag.RedFlagRule(dev.sluice.rules.redflag.BuiltinRedFlags.encodedShell(),
                        dev.sluice.rules.redflag.RedFlagAction.ALERT, dev.sluice.rules.redflag.RedFlagDirection.BOTH)),
                List.of());
    }

    @Test
    void llmRedFlagAndCaptureFieldsGoToOtlpUnderGenAiAndSluiceNames() throws Exception {
        AuditExport export = AuditExport.start(new AuditSettings(Path.of("audit.jsonl"), 1 << 20, 1,
                AuditSettings.Format.SLUICE, false), Map.of("otel.exporter.otlp.logs.endpoint", receiver.logsEndpoint(),
                "otel.blrp.schedule.delay", "100"), OutputStream.nullOutputStream(), AuditExportTest::redFlagRules);
        try {
            export.write(llmRecord("00000000000000a1", null, null));
            export.write(llmRecord("00000000000000a2", "red_flag", "red flag encoded_shell in the request body"));
            export.write(record("00000000000000a3"));
            await().atMost(Duration.ofSeconds(20)).until(() -> receiver.records().size() >= 3);
        } finally {
            export.close();
        }
        Map<String, OtlpReceiver.Received> byId = receiver.records().stream()
                .collect(Collectors.toMap(r -> r.attribute("event.id"), r -> r));
        OtlpReceiver.Received logged = byId.get("00000000000000a1");
        assertThat(logged.attribute("gen_ai.response.model")).isEqualTo("claude-test-1");
        assertThat(logged.attribute("gen_ai.usage.input_tokens")).isEqualTo("12");
        assertThat(logged.attribute("gen_ai.usage.output_tokens")).isEqualTo("34");
        assertThat(logged.attribute("sluice.red_flag.rules")).isEqualTo("credential_path,encoded_shell");
        assertThat(logged.attribute("sluice.red_flags.credential_path")).isEqualTo("1");
        assertThat(logged.attribute("sluice.red_flags.encoded_shell")).isEqualTo("2");
        assertThat(logged.attribute("sluice.red_flag.action")).as("the strongest rule's, from the policy").isEqualTo("alert");
        assertThat(logged.attribute("sluice.capture")).isEqualTo("true");
        assertThat(logged.attributes().keySet()).noneMatch(k -> k.startsWith("llm."));
        assertThat(byId.get("00000000000000a2").attribute("sluice.red_flag.action")).as("the record shows a block")
                .isEqualTo("block");
        OtlpReceiver.Received plain = byId.get("00000000000000a3");
        assertThat(plain.attributes().keySet()).noneMatch(k -> k.startsWith("gen_ai.") || k.startsWith("sluice."));
    }

    @Test
    void ocsfCarriesLlmRedFlagAndCaptureFieldsInUnmapped() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        AuditExport export = AuditExport.start(new AuditSettings(Path.of("audit.jsonl"), 1 << 20, 1,
                AuditSettings.Format.OCSF, true), Map.of(), out, AuditExportTest::redFlagRules);
        export.write(llmRecord("00000000000000b1", null, null));
        export.write(llmRecord("00000000000000b2", null, "red_flag: encoded_shell in the response, stream closed"));
        export.write(record("00000000000000b3"));
        export.close();
        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertThat(lines).hasSize(3);
        JsonNode unmapped = JSON.readTree(lines.get(0)).get("unmapped");
        assertThat(unmapped.path("llm.model").asText()).isEqualTo("claude-test-1");
        assertThat(unmapped.path("llm.usage.input_tokens").asLong()).isEqualTo(12);
        assertThat(unmapped.path("llm.usage.output_tokens").asLong()).isEqualTo(34);
        assertThat(unmapped.path("red_flags").toString()).isEqualTo("{\"credential_path\":1,\"encoded_shell\":2}");
        assertThat(unmapped.path("red_flag.action").asText()).isEqualTo("alert");
        assertThat(unmapped.path("capture").asBoolean()).isTrue();
        assertThat(JSON.readTree(lines.get(1)).at("/unmapped/red_flag.action").asText()).isEqualTo("block");
        JsonNode plain = JSON.readTree(lines.get(2)).get("unmapped");
        assertThat(plain.has("llm.model") || plain.has("red_flags") || plain.has("capture")).isFalse();
        // without the policy's rules, only what the record shows
        assertThat(JSON.readTree(OcsfMapper.toJson(llmRecord("00000000000000b4", null, null))).get("unmapped")
                .has("red_flag.action")).isFalse();
    }

    private static AuditRecord record(String id) {
        return new AuditRecord(Instant.parse("2026-12-01T10:00:00.123Z"), id, "default", "127.0.0.1", 40000,
                "explicit", "GET", "http", "example.test", 80, "/", "none", null, "deny", "not_allowlisted",
                "implicit-deny", null, 403, 0, 0, 1, null, null, null, null);
    }

    private String scrape() throws Exception {
        InetSocketAddress admin = sluice.server().adminAddress();
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + admin.getPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
    }
}
