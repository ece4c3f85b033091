package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.Fakes.ALNUM;
import static dev.sluice.rules.redact.Fakes.B64;
import static dev.sluice.rules.redact.Fakes.URLSAFE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class StreamingRedactorTest {

    static final DetectorSet ALL = DetectorSet.builtins();
    static final ObjectMapper JSON = new ObjectMapper();

    static String utf8(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Feeds {@code body} in the given chunk boundaries and returns the whole output. */
    static String feedSplit(DetectorSet set, BodyFormat format, RedactionAction action, byte[] body, int... cuts)
            throws BodyTooLargeException {
        StreamingRedactor r = set.newRedactor(format, action, Long.MAX_VALUE);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int from = 0;
        for (int cut : cuts) {
            out.writeBytes(r.feed(body, from, cut - from));
            from = cut;
        }
        out.writeBytes(r.feed(body, from, body.length - from));
        out.writeBytes(r.finish());
        return out.toString(StandardCharsets.UTF_8);
    }

    static Stream<Arguments> splitCases() {
        Fakes f = new Fakes(99);
        String ghp = f.github("ghp_");
        String ant = "sk-ant-" + "api03-" + f.of(URLSAFE, 93) + "AA";
        String oai = "sk-proj-" + f.of(URLSAFE, 60) + "T3Blbk" + "FJ" + f.of(URLSAFE, 60);
        String pem = Fakes.pem("RSA", f.pemBody(12, "\n"), "\n");
        String jwt = "eyJ" + f.of(URLSAFE, 20) + ".eyJ" + f.of(URLSAFE, 50) + "." + f.of(URLSAFE, 43);
        String url = "postgres://svc:" + f.of(ALNUM, 16) + "@db:5432/x";
        String azure = f.of(ALNUM, 3) + "7Q~" + f.of(ALNUM, 34);
        String text = "tool output:\n$ cat .env\nGITHUB=" + ghp + "\nANTHROPIC=" + ant + "\nOPENAI=" + oai + "\n"
                + pem + "\nsession " + jwt + "\nDATABASE_URL=" + url + "\nAZ " + azure + " done.\n";
        String plainExpected = text.replace(ghp, "[REDACTED:github-pat]").replace(ant, "[REDACTED:anthropic-api-key]")
                .replace(oai, "[REDACTED:openai-api-key]").replace(pem, "[REDACTED:private-key-pem]")
                .replace(jwt, "[REDACTED:jwt]").replace(url, url.replaceAll(":[A-Za-z0-9]{16}@", ":[REDACTED:url-password]@"))
                .replace(azure, "[REDACTED:azure-ad-client-secret]");
        // JSON: slashes escaped, one key written entirely in \\u escapes, an emoji as a surrogate pair
        String escapedAnt = ant.chars().mapToObj(c -> String.format("\\u%04X", c)).reduce("", String::concat);
        String content = Fakes.jsonString(text, true, false).replace(ant, escapedAnt);
        String json = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi \\ud83d\\ude00\"},{\"role\":\"tool\",\"content\":"
                + content + "}]}";
        return Stream.of(
                Arguments.of("plain", BodyFormat.PLAIN, text, plainExpected),
                Arguments.of("json", BodyFormat.JSON, json, plainExpected));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("splitCases")
    void findsCredentialsSplitAtAnyOffset(String name, BodyFormat format, String body, String expectedText) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        String whole = feedSplit(ALL, format, RedactionAction.REDACT, bytes);
        if (format == BodyFormat.PLAIN) {
            assertThat(whole).isEqualTo(expectedText);
        } else {
            JsonNode tree = JSON.readTree(whole);
            assertThat(tree.get("messages").get(1).get("content").asText()).isEqualTo(expectedText);
            assertThat(tree.get("messages").get(0).get("content").asText()).isEqualTo("hi \uD83D\uDE00");
        }
        for (int cut = 0; cut <= bytes.length; cut++) {
            assertThat(feedSplit(ALL, format, RedactionAction.REDACT, bytes, cut)).as("cut at %d", cut).isEqualTo(whole);
        }
        // three pieces, and one byte at a time
        for (int cut = 1; cut < bytes.length; cut += 37) {
            int second = Math.min(bytes.length, cut + 1 + cut % 11);
            assertThat(feedSplit(ALL, format, RedactionAction.REDACT, bytes, cut, second)).as("cuts %d %d", cut, second)
                    .isEqualTo(whole);
        }
        int[] every = new int[bytes.length - 1];
        for (int i = 0; i < every.length; i++) {
            every[i] = i + 1;
        }
        assertThat(feedSplit(ALL, format, RedactionAction.REDACT, bytes, every)).isEqualTo(whole);
    }

    @Test
    void findingsAreCountsByDetectorId() throws Exception {
        Arguments a = splitCases().findFirst().orElseThrow();
        String text = (String) a.get()[2];
        Fakes.Run run = Fakes.run(ALL, BodyFormat.PLAIN, RedactionAction.REDACT, text + text);
        assertThat(run.redactor().findings()).containsExactly(
                Map.entry("anthropic-api-key", 2L), Map.entry("azure-ad-client-secret", 2L), Map.entry("github-pat", 2L),
                Map.entry("jwt", 2L), Map.entry("openai-api-key", 2L), Map.entry("private-key-pem", 2L),
                Map.entry("url-password", 2L));
    }

    @Test
    void pemKeyInsideJsonStringWithEscapedNewlines() throws Exception {
        Fakes f = new Fakes(3);
        String pem = Fakes.pem("", f.pemBody(26, "\n"), "\n");
        String body = "{\"input\":[{\"type\":\"function_call_output\",\"output\":" + Fakes.jsonString("key.pem:\n" + pem + "\n", false, false)
                + "}]}";
        assertThat(body).contains("-----BEGIN PRIVATE KEY-----\\n");
        Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
        assertThat(run.redactor().findings()).isEqualTo(Map.of("private-key-pem", 1L));
        assertThat(JSON.readTree(run.output()).get("input").get(0).get("output").asText())
                .isEqualTo("key.pem:\n[REDACTED:private-key-pem]\n");
    }

    @Test
    void matchAcrossJsonStringsKeepsJsonValid() throws Exception {
        Fakes f = new Fakes(4);
        List<String> lines = List.of("-----BEGIN RSA PRIVATE KEY-----", f.of(B64, 64), f.of(B64, 64), "-----END RSA PRIVATE KEY-----");
        String body = "{\"lines\": [\"" + String.join("\", \"", lines) + "\"], \"n\": 4}";
        Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
        assertThat(run.redactor().findings()).isEqualTo(Map.of("private-key-pem", 1L));
        JsonNode tree = JSON.readTree(run.output());
        assertThat(tree.get("n").asInt()).isEqualTo(4);
        assertThat(tree.get("lines")).hasSize(4).allSatisfy(n -> assertThat(n.asText()).isEqualTo("[REDACTED:private-key-pem]"));
    }

    /**
     * A match across strings: its quotes and the punctuation between the strings stay, every other piece
     * is replaced — digits inside a string too — and the JSON still parses.
     */
    @Test
    void matchAcrossStringsReplacesEveryPieceButPunctuation() throws Exception {
        DetectorSet set = DetectorSet.of(List.of(Detector.custom("ticket", java.util.regex.Pattern.compile(
                "zq-[0-9]+\",\\s*\"[0-9]+\",\\s*\"[a-z0-9]+"), List.of("zq-"), 100)));
        String body = "{\"a\": [\"zq-123\", \"456\",\n  \"x9\"], \"n\": 4}";
        Fakes.Run run = Fakes.run(set, BodyFormat.JSON, RedactionAction.REDACT, body);
        assertThat(run.output()).isEqualTo(
                "{\"a\": [\"[REDACTED:ticket]\", \"[REDACTED:ticket]\",\n  \"[REDACTED:ticket]\"], \"n\": 4}");
        assertThat(JSON.readTree(run.output()).get("n").asInt()).isEqualTo(4);
    }

    /**
     * With only short custom keywords, an escaped keyword character ({@code &#92;u00XX}) cut by a chunk
     * boundary is still found: the escape itself is four bytes long.
     */
    @Test
    void escapedKeywordCharacterCutByAChunkWithShortKeywords() throws Exception {
        DetectorSet set = DetectorSet.of(List.of(Detector.custom("ticket",
                java.util.regex.Pattern.compile("zq[0-9]{6}"), List.of("zq"), 20)));
        byte[] body = "{\"a\": \"x \\u007aq123456 y\"}".getBytes(StandardCharsets.UTF_8);
        for (int cut = 0; cut <= body.length; cut++) {
            String out = feedSplit(set, BodyFormat.JSON, RedactionAction.REDACT, body, cut);
            assertThat(out).as("cut at %d", cut).isEqualTo("{\"a\": \"x [REDACTED:ticket] y\"}");
        }
    }

    @Test
    void generatedJsonWithManySecretsStaysValid() throws Exception {
        Fakes f = new Fakes(5);
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 50; i++) {
            text.append("line ").append(i).append(" \"quoted\" \\ back / slash é ✓ ");
            if (i % 5 == 0) {
                text.append("key=").append("AKIA").append(f.of(Fakes.BASE32, 16)).append('\n');
            }
        }
        String body = JSON.writeValueAsString(Map.of("model", "x", "messages", List.of(Map.of("role", "user", "content", text.toString()))));
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        for (int chunk : new int[] {1, 7, 64, 1000, bytes.length}) {
            StreamingRedactor r = ALL.newRedactor(BodyFormat.JSON, RedactionAction.REDACT, bytes.length);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (int off = 0; off < bytes.length; off += chunk) {
                out.writeBytes(r.feed(ByteBuffer.wrap(bytes, off, Math.min(chunk, bytes.length - off))));
            }
            out.writeBytes(r.finish());
            String content = JSON.readTree(out.toByteArray()).get("messages").get(0).get("content").asText();
            assertThat(content).isEqualTo(text.toString().replaceAll("AKIA[A-Z2-7]{16}", "[REDACTED:aws-access-key-id]"));
            assertThat(r.findings()).isEqualTo(Map.of("aws-access-key-id", 10L));
        }
    }

    @Test
    void lenientOnBrokenJson() throws Exception {
        String key = "AKIA" + new Fakes(6).of(Fakes.BASE32, 16);
        for (String body : new String[] {"not json " + key, "{\"a\": \"unterminated " + key, "{\"a\": \"bad \\x escape " + key + "\"}",
                "{\"a\": \"trailing backslash " + key + "\\"}) {
            Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
            assertThat(run.redactor().findings()).as(body).isEqualTo(Map.of("aws-access-key-id", 1L));
            assertThat(run.output()).doesNotContain(key);
        }
    }

    @Test
    void loneSurrogatesAndNonAsciiAreHarmless() throws Exception {
        String body = "{\"a\": \"\\ud800 x \\udc00 y \\ud83d\", \"b\": \"h\u00e9llo \u2713\"}";
        Fakes.Run run = Fakes.run(ALL, BodyFormat.JSON, RedactionAction.REDACT, body);
        assertThat(run.output()).isEqualTo(body);
        assertThat(run.redactor().findings()).isEmpty();
    }

    @Test
    void blockStopsOutputBeforeTheSecret() throws Exception {
        Fakes f = new Fakes(8);
        String key = f.github("ghp_");
        String before = "x".repeat(100_000);
        byte[] body = (before + " " + key + " " + "y".repeat(100_000)).getBytes(StandardCharsets.UTF_8);
        StreamingRedactor r = ALL.newRedactor(BodyFormat.PLAIN, RedactionAction.BLOCK, Long.MAX_VALUE);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int off = 0; off < body.length; off += 4096) {
            out.writeBytes(r.feed(body, off, Math.min(4096, body.length - off)));
        }
        out.writeBytes(r.finish());
        assertThat(r.blocked()).isTrue();
        assertThat(r.findings()).isEqualTo(Map.of("github-pat", 1L));
        assertThat(out.toString(StandardCharsets.UTF_8)).doesNotContain("ghp_").hasSizeLessThanOrEqualTo(before.length() + 1);
    }

    @Test
    void reportPassesBytesUnchanged() throws Exception {
        Fakes f = new Fakes(9);
        String key = "AIza" + f.of(URLSAFE, 35);
        byte[] body = ("{\"q\": \"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
        StreamingRedactor r = ALL.newRedactor(BodyFormat.JSON, RedactionAction.REPORT, Long.MAX_VALUE);
        byte[] a = r.feed(body, 0, 10);
        byte[] b = r.feed(body, 10, body.length - 10);
        assertThat(utf8(a) + utf8(b) + utf8(r.finish())).isEqualTo(utf8(body));
        assertThat(r.findings()).isEqualTo(Map.of("google-api-key", 1L));
        assertThat(r.blocked()).isFalse();
    }

    @Test
    void bodyLimitIsEnforced() throws Exception {
        StreamingRedactor r = ALL.newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, 100);
        r.feed(new byte[60]);
        assertThatThrownBy(() -> r.feed(new byte[41])).isInstanceOfSatisfying(BodyTooLargeException.class, e -> {
            assertThat(e.limitBytes()).isEqualTo(100);
        });
        assertThatThrownBy(() -> r.feed(new byte[1])).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void feedAfterFinishIsRefused() throws Exception {
        StreamingRedactor r = ALL.newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, 100);
        assertThat(r.finish()).isEmpty();
        assertThat(r.finish()).isEmpty();
        assertThatThrownBy(() -> r.feed(new byte[1])).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void formatForContentType() {
        assertThat(BodyFormat.forContentType("application/json; charset=utf-8")).isEqualTo(BodyFormat.JSON);
        assertThat(BodyFormat.forContentType("Application/Vnd.Api+JSON")).isEqualTo(BodyFormat.JSON);
        assertThat(BodyFormat.forContentType("text/event-stream")).isEqualTo(BodyFormat.JSON);
        assertThat(BodyFormat.forContentType("text/plain")).isEqualTo(BodyFormat.PLAIN);
        assertThat(BodyFormat.forContentType(null)).isEqualTo(BodyFormat.PLAIN);
    }

    /**
     * 100 MB in 64 KiB chunks: output size is exact and the redactor's buffers stay small, whatever the
     * body size.
     */
    @ParameterizedTest
    @MethodSource("formats")
    void hundredMegabytesInBoundedMemory(BodyFormat format) throws Exception {
        Fakes f = new Fakes(10);
        String key = "sk-ant-" + "api03-" + f.of(URLSAFE, 93) + "AA";
        StringBuilder unit = new StringBuilder();
        while (unit.length() < 64 * 1024 - 200) {
            unit.append("def handler(event):\\n    return {\\\"status\\\": 200, \\\"body\\\": event}\\n");
        }
        byte[] clean = unit.toString().getBytes(StandardCharsets.US_ASCII);
        byte[] dirty = (unit.substring(0, unit.length() - key.length() - 2) + " " + key + " ").getBytes(StandardCharsets.US_ASCII);
        String replacement = "[REDACTED:anthropic-api-key]";
        StreamingRedactor r = ALL.newRedactor(format, RedactionAction.REDACT, 200L << 20);
        long out = 0;
        long in = 0;
        long maxRetained = 0;
        int dirtyChunks = 0;
        byte[] open = "{\"content\": \"".getBytes(StandardCharsets.US_ASCII);
        out += r.feed(open).length;
        in += open.length;
        for (int i = 0; in < 100L << 20; i++) {
            byte[] chunk = i % 16 == 5 ? dirty : clean;
            dirtyChunks += chunk == dirty ? 1 : 0;
            out += r.feed(chunk).length;
            in += chunk.length;
            maxRetained = Math.max(maxRetained, r.retainedBytes());
        }
        out += r.feed("\"}".getBytes(StandardCharsets.US_ASCII)).length;
        in += 2;
        out += r.finish().length;
        assertThat(r.findings()).isEqualTo(Map.of("anthropic-api-key", (long) dirtyChunks));
        assertThat(out).isEqualTo(in - (long) dirtyChunks * (key.length() - replacement.length()));
        assertThat(maxRetained).as("retained bytes").isLessThan(512 * 1024);
    }

    static Stream<BodyFormat> formats() {
        return Stream.of(BodyFormat.PLAIN, BodyFormat.JSON);
    }
}
