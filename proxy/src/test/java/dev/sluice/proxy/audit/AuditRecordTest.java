package dev.sluice.proxy.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AuditRecordTest {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Instant T = Instant.parse("2026-11-30T09:31:02.123456Z");

    static AuditRecord minimal() {
        return new AuditRecord(T, "0123456789abcdef", null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, 0, 0, 0, null, null, null, null);
    }

    static AuditRecord full() {
        Map<String, Long> redactions = new LinkedHashMap<>();
        redactions.put("openai-key", 2L);
        redactions.put("aws-access-key", 1L);
        return new AuditRecord(T, "0123456789abcdef", "github", "10.0.0.2", 50123, "explicit", "GET", "https",
                "api.github.com", 443, "/repos?page=***", "intercept", "api.github.com", "allow", "allowlisted",
                "extensions.github.allow[0]", "140.82.112.6", 200, 512, 4096, 37, redactions, "ok", "none", "public",
                "granted", "alice", "once", List.of("openai", "github-token"), "inspect", 3L, 5L, "gpt-4o-mini",
                12L, 40L, Map.of("template_injection", 1L), true, "h2", "upstream_failure");
    }

    static List<String> keys(JsonNode node) {
        List<String> keys = new ArrayList<>();
        node.fieldNames().forEachRemaining(keys::add);
        return keys;
    }

    @Test
    void writesEveryFieldInDesignOrder() throws Exception {
        JsonNode json = MAPPER.readTree(full().toJson());
        assertThat(keys(json)).containsExactlyElementsOf(AuditFields.ALL);
        assertThat(json.get("client.port").isInt()).isTrue();
        assertThat(json.get("redactions").get("openai-key").asLong()).isEqualTo(2);
    }

    @Test
    void writesTheSecondWaveFieldsWithTheirTypes() throws Exception {
        JsonNode json = MAPPER.readTree(full().toJson());
        assertThat(json.get("credentials").isArray()).isTrue();
        assertThat(json.get("credentials").get(0).asText()).isEqualTo("github-token");
        assertThat(json.get("websocket.mode").asText()).isEqualTo("inspect");
        assertThat(json.get("websocket.messages_sent").asLong()).isEqualTo(3);
        assertThat(json.get("websocket.messages_received").asLong()).isEqualTo(5);
        assertThat(json.get("llm.model").asText()).isEqualTo("gpt-4o-mini");
        assertThat(json.get("llm.usage.input_tokens").asLong()).isEqualTo(12);
        assertThat(json.get("llm.usage.output_tokens").asLong()).isEqualTo(40);
        assertThat(json.get("red_flags").get("template_injection").asLong()).isEqualTo(1);
        assertThat(json.get("capture").isBoolean()).isTrue();
        assertThat(json.get("capture").asBoolean()).isTrue();
    }

    @Test
    void omitsNullFieldsButAlwaysWritesCountersAndDuration() throws Exception {
        JsonNode json = MAPPER.readTree(minimal().toJson());
        assertThat(keys(json)).containsExactly("time", "event.id", "bytes.sent", "bytes.received", "duration_ms");
        assertThat(json.get("bytes.sent").asLong()).isZero();
    }

    @Test
    void formatsTimeAsRfc3339UtcWithMilliseconds() {
        assertThat(AuditRecord.formatTime(T)).isEqualTo("2026-11-30T09:31:02.123Z");
        assertThat(AuditRecord.formatTime(Instant.parse("2026-01-02T03:04:05Z")))
                .isEqualTo("2026-01-02T03:04:05.000Z");
        assertThat(minimal().toJson()).startsWith("{\"time\":\"2026-11-30T09:31:02.123Z\",");
    }

    @Test
    void emptyRedactionsAreOmittedAndOthersSortedById() {
        AuditRecord empty = new AuditRecord(T, "id", null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, 0, 0, 0, Map.of(), null, null, null);
        assertThat(empty.redactions()).isNull();
        assertThat(empty.toJson()).doesNotContain("redactions");
        assertThat(full().redactions().keySet()).containsExactly("aws-access-key", "openai-key");
    }

    @Test
    void staysOnOneLineWhateverTheValues() {
        AuditRecord r = new AuditRecord(T, "id", "ext\nwith\u0000control", null, null, null, null, null, null,
                null, "/a\r\nb", null, null, null, null, null, null, null, 0, 0, 0, null, null, "\"quoted\"", null);
        assertThat(r.toJson()).doesNotContain("\n").doesNotContain("\r");
    }

    @Test
    void rejectsNegativeCounters() {
        assertThatThrownBy(() -> new AuditRecord(T, "id", null, null, null, null, null, null, null, null, null,
                null, null, null, null, null, null, null, -1, 0, 0, null, null, null, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bytesSent");
    }
}
