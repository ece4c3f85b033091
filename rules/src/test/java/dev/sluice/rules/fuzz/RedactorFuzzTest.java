package dev.sluice.rules.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

/**
 * Differential fuzzing of the streaming redactor:
 * <ul>
 *   <li>chunked vs whole: a body fed in chunks cut at fuzzed places gives the same output bytes and the
 *       same findings as the body fed at once, in PLAIN and in JSON mode;</li>
 *   <li>JSON vs plain: a text written as one JSON string value ({@code {"text": ...}}) gives in JSON
 *       mode the same findings as the text itself in PLAIN mode, and the JSON output's value is the
 *       PLAIN output.</li>
 * </ul>
 * Seeds: {@code RedactorFuzzTestInputs/} (bodies with fake credentials of several detectors).
 */
class RedactorFuzzTest {

    private static final DetectorSet DETECTORS = DetectorSet.builtins();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX = 1 << 20;

    @FuzzTest(maxDuration = "30s")
    void chunkedEqualsWhole(FuzzedDataProvider data) throws Exception {
        BodyFormat format = data.consumeBoolean() ? BodyFormat.JSON : BodyFormat.PLAIN;
        int[] cuts = new int[data.consumeInt(0, 8)];
        for (int i = 0; i < cuts.length; i++) {
            cuts[i] = data.consumeInt(0, 4096);
        }
        byte[] body = data.consumeRemainingAsBytes();
        Arrays.sort(cuts);

        StreamingRedactor whole = DETECTORS.newRedactor(format, RedactionAction.REDACT, MAX);
        ByteArrayOutputStream wholeOut = new ByteArrayOutputStream();
        wholeOut.write(whole.feed(body));
        wholeOut.write(whole.finish());

        StreamingRedactor chunked = DETECTORS.newRedactor(format, RedactionAction.REDACT, MAX);
        ByteArrayOutputStream chunkedOut = new ByteArrayOutputStream();
        int from = 0;
        for (int cut : cuts) {
            int to = Math.min(cut, body.length);
            if (to > from) {
                chunkedOut.write(chunked.feed(body, from, to - from));
                from = to;
            }
        }
        chunkedOut.write(chunked.feed(body, from, body.length - from));
        chunkedOut.write(chunked.finish());

        assertThat(chunked.findings()).as("findings, %s, cuts %s", format, Arrays.toString(cuts))
                .isEqualTo(whole.findings());
        assertThat(chunkedOut.toByteArray()).as("output, %s, cuts %s", format, Arrays.toString(cuts))
                .isEqualTo(wholeOut.toByteArray());
    }

    @FuzzTest(maxDuration = "30s")
    void jsonEqualsPlain(FuzzedDataProvider data) throws Exception {
        String text = data.consumeRemainingAsString();
        byte[] plainBytes = text.getBytes(StandardCharsets.UTF_8);
        if (!new String(plainBytes, StandardCharsets.UTF_8).equals(text)) {
            return; // lone surrogates: UTF-8 encoding changes the text itself (documented, not a difference)
        }
        StreamingRedactor plain = DETECTORS.newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, MAX);
        String plainOut = new String(concat(plain.feed(plainBytes), plain.finish()), StandardCharsets.UTF_8);

        ObjectNode doc = JSON.createObjectNode().put("text", text);
        byte[] jsonBytes = JSON.writeValueAsBytes(doc);
        StreamingRedactor json = DETECTORS.newRedactor(BodyFormat.JSON, RedactionAction.REDACT, MAX);
        byte[] jsonOut = concat(json.feed(jsonBytes), json.finish());

        Map<String, Long> plainFindings = plain.findings();
        assertThat(json.findings()).as("findings of the same text, JSON vs plain").isEqualTo(plainFindings);
        assertThat(JSON.readTree(jsonOut).path("text").asText()).as("JSON output value vs plain output")
                .isEqualTo(plainOut);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

}
