package dev.sluice.rules.llm;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class UsageScannerTest {

    static final String OPENAI_CHAT = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-mini\","
            + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"}}],"
            + "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7,\"total_tokens\":19,"
            + "\"prompt_tokens_details\":{\"cached_tokens\":3}}}";
    static final String OPENAI_RESPONSES = "{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-4.1\","
            + "\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"x\"}]}],"
            + "\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":5}}";
    static final String ANTHROPIC = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
            + "\"model\":\"claude-sonnet-4\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],"
            + "\"usage\":{\"input_tokens\":25,\"output_tokens\":9}}";
    static final String GEMINI = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]}}],"
            + "\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":4,\"totalTokenCount\":12},"
            + "\"modelVersion\":\"gemini-2.0-flash\"}";

    static final String OPENAI_CHAT_SSE = "data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"h\"}}],\"usage\":null}\n\n"
            + "data: {\"id\":\"c\",\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2}}\n\n"
            + "data: [DONE]\n\n";
    static final String OPENAI_RESPONSES_SSE = "event: response.created\n"
            + "data: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-4.1\",\"usage\":null}}\n\n"
            + "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n"
            + "event: response.completed\n"
            + "data: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-4.1\",\"usage\":{\"input_tokens\":40,\"output_tokens\":6}}}\n\n";
    static final String ANTHROPIC_SSE = "event: message_start\r\n"
            + "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\r\n\r\n"
            + "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\r\n\r\n"
            + ": a comment\r\n\r\n"
            + "event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\r\n\r\n"
            + "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
    static final String GEMINI_SSE = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],"
            + "\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1},\"modelVersion\":\"gemini-2.0-flash\"}\n\n"
            + "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}],"
            + "\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":5},\"modelVersion\":\"gemini-2.0-flash\"}\n\n";

    @Test
    void theDataOfEventsThatAreNotJsonIsHandedOnWholeAndJsonEventsAreNot() {
        UsageScanner scanner = UsageScanner.forContentType("text/event-stream");
        java.util.List<String> unread = new java.util.ArrayList<>();
        StringBuilder piece = new StringBuilder();
        scanner.onUnreadData((b, off, len, end) -> {
            piece.append(new String(b, off, len, StandardCharsets.UTF_8));
            if (end) {
                unread.add(piece.toString());
                piece.setLength(0);
            }
        });
        String stream = OPENAI_CHAT_SSE
                + "data: plain text, and a key\ndata: sk-not-json-at-all\n\n"
                + "data: {\"broken\": \"json\" oops}\n\n";
        byte[] bytes = stream.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i += 7) { // in small pieces, as a network would cut it
            scanner.feed(bytes, i, Math.min(7, bytes.length - i));
        }
        scanner.finish();
        assertThat(unread).containsExactly("[DONE]", "plain text, and a key\nsk-not-json-at-all",
                "{\"broken\": \"json\" oops}");
        assertThat(scanner.inputTokens()).isEqualTo(11);
    }

    @Test
    void readsEachProvidersJsonBody() {
        assertUsage(UsageScanner.Framing.JSON, OPENAI_CHAT, "gpt-4o-mini", 12, 7);
        assertUsage(UsageScanner.Framing.JSON, OPENAI_RESPONSES, "gpt-4.1", 30, 5);
        assertUsage(UsageScanner.Framing.JSON, ANTHROPIC, "claude-sonnet-4", 25, 9);
        assertUsage(UsageScanner.Framing.JSON, GEMINI, "gemini-2.0-flash", 8, 4);
    }

    @Test
    void readsEachProvidersEventStreamAndTheLastCumulativeCountWins() {
        assertUsage(UsageScanner.Framing.SSE, OPENAI_CHAT_SSE, "gpt-4o-mini", 11, 2);
        assertUsage(UsageScanner.Framing.SSE, OPENAI_RESPONSES_SSE, "gpt-4.1", 40, 6);
        assertUsage(UsageScanner.Framing.SSE, ANTHROPIC_SSE, "claude-sonnet-4", 25, 15);
        assertUsage(UsageScanner.Framing.SSE, GEMINI_SSE, "gemini-2.0-flash", 8, 5);
    }

    @Test
    void nestedOrUnrelatedCountsAreNotUsage() {
        String body = "{\"choices\":[{\"usage\":{\"prompt_tokens\":99}}],\"meta\":{\"a\":{\"usage\":{\"input_tokens\":5}}},"
                + "\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":1.5},\"content\":\"usage prompt_tokens 7\"}";
        UsageScanner s = scanWhole(UsageScanner.Framing.JSON, body);
        assertThat(s.hasUsage()).isFalse();
        assertThat(s.model()).isNull();
    }

    @Test
    void notJsonIsSkippedAndWhatCameBeforeStays() {
        UsageScanner s = scanWhole(UsageScanner.Framing.SSE, "data: {\"usage\":{\"input_tokens\":3}}\n\ndata: not json\n\n"
                + "data: {\"usage\":{\"output_tokens\":4}}\n\n");
        assertThat(s.inputTokens()).isEqualTo(3);
        assertThat(s.outputTokens()).isEqualTo(4);
        assertThat(scanWhole(UsageScanner.Framing.JSON, "<html>").hasUsage()).isFalse();
    }

    @Test
    void multiLineDataAndALastEventWithoutItsBlankLine() {
        UsageScanner s = scanWhole(UsageScanner.Framing.SSE, "data: {\"usage\":\ndata: {\"input_tokens\":3,\ndata:\"output_tokens\":2}}");
        assertThat(s.inputTokens()).isEqualTo(3);
        assertThat(s.outputTokens()).isEqualTo(2);
    }

    @Test
    void contentTypes() {
        assertThat(UsageScanner.forContentType("application/json; charset=utf-8")).isNotNull();
        assertThat(UsageScanner.forContentType("Text/Event-Stream")).isNotNull();
        assertThat(UsageScanner.forContentType("text/html")).isNull();
        assertThat(UsageScanner.forContentType(null)).isNull();
    }

    private static void assertUsage(UsageScanner.Framing framing, String body, String model, long in, long out) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        // whole, then split at every byte, then one byte at a time
        for (int split = 0; split <= bytes.length; split++) {
            UsageScanner s = UsageScanner.of(framing);
            s.feed(bytes, 0, split);
            s.feed(bytes, split, bytes.length - split);
            s.finish();
            assertThat(s.model()).as("split at %d", split).isEqualTo(model);
            assertThat(s.inputTokens()).as("split at %d", split).isEqualTo(in);
            assertThat(s.outputTokens()).as("split at %d", split).isEqualTo(out);
        }
        UsageScanner s = UsageScanner.of(framing);
        for (int i = 0; i < bytes.length; i++) {
            s.feed(bytes, i, 1);
        }
        s.finish();
        assertThat(s.inputTokens()).isEqualTo(in);
        assertThat(s.outputTokens()).isEqualTo(out);
    }

    private static UsageScanner scanWhole(UsageScanner.Framing framing, String body) {
        UsageScanner s = UsageScanner.of(framing);
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        s.feed(bytes, 0, bytes.length);
        s.finish();
        return s;
    }
}
