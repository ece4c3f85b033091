package dev.sluice.rules.llm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteArrayFeeder;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads the model name and token usage an LLM provider reports in a response body, as the body streams
 * past: a JSON body ({@code application/json}) through Jackson's non-blocking parser, or a server-sent
 * event stream ({@code text/event-stream}, WHATWG HTML "Server-sent events") event by event, each event's
 * {@code data} lines fed to a fresh non-blocking parser as they arrive. Nothing is buffered beyond the
 * parser's own token state, so a stream of any length costs constant memory.
 *
 * <p>Shapes read (paths from the top-level object of a body or of one event's data):
 * <ul>
 *   <li>OpenAI chat completions: {@code model}, {@code usage.prompt_tokens}, {@code usage.completion_tokens}
 *       (in a stream: the last chunk, with {@code stream_options.include_usage});</li>
 *   <li>OpenAI responses: {@code model}, {@code usage.input_tokens}, {@code usage.output_tokens}, and in a
 *       stream the same under {@code response} ({@code response.completed});</li>
 *   <li>Anthropic messages: {@code model}, {@code usage.input_tokens}, {@code usage.output_tokens}; in a
 *       stream {@code message_start}'s {@code message.model} / {@code message.usage} and
 *       {@code message_delta}'s {@code usage} (whose counts are cumulative);</li>
 *   <li>Gemini: {@code modelVersion}, {@code usageMetadata.promptTokenCount},
 *       {@code usageMetadata.candidatesTokenCount} (cumulative in a stream).</li>
 * </ul>
 * Every provider's streamed counts are totals so far, never increments, so within one body the last value
 * seen for input and for output wins. A body that is not JSON, or an event that is not (OpenAI's
 * {@code [DONE]}), is skipped; what was read before stays. Not thread-safe: one instance per response.
 */
public final class UsageScanner {

    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final int MAX_FIELD_NAME = 16;

    /** How the body is framed. */
    public enum Framing {
        /** One JSON document. */
        JSON,
        /** {@code text/event-stream}: events whose data is JSON. */
        SSE
    }

    /** Receives every JSON string value the scanner reads, with the name of the field that holds it. */
    @FunctionalInterface
    public interface StringSink {
        /**
         * @param field the member name holding the string, or null for an array element or a top-level string
         * @param value the decoded string (escapes undone)
         */
        void accept(String field, String value);
    }

    /** Receives the data of an event that is not JSON ({@link #onUnreadData}). */
    public interface DataSink {
        /**
         * @param b the data bytes as they came (data lines joined with a line feed)
         * @param eventEnd whether this piece ends the event's data
         */
        void data(byte[] b, int off, int len, boolean eventEnd);
    }

    /** Most data of one event held while its JSON reads well, in bytes; a longer event's head is dropped. */
    static final int MAX_HELD_EVENT_BYTES = 256 * 1024;

    private final Framing framing;
    private StringSink strings;
    private DataSink unread;
    /** The current event's data, held for {@link #unread} until it is known to be JSON or not. */
    private byte[] eventData;
    private int eventDataLength;
    /** The current event's data did not read as JSON (a parse error, not the normal end). */
    private boolean eventUnreadable;
    private String model;
    private long inputTokens = -1;
    private long outputTokens = -1;
    private boolean modelFromVersion;

    // JSON: the body's parser; SSE: the current event's parser (null between events or after a failure)
    private JsonParser parser;
    private boolean parserFailed;

    // SSE line state
    private final byte[] fieldName = new byte[MAX_FIELD_NAME];
    private int fieldLength;
    private boolean fieldTooLong;
    /** 0: reading the field name, 1: just after "data:" (an optional space), 2: data value, 3: ignored value. */
    private int lineState;
    private boolean afterCr;
    private boolean eventHasData;
    private boolean lineEmpty = true;

    private UsageScanner(Framing framing) {
        this.framing = framing;
        if (framing == Framing.JSON) {
            parser = newParser();
        }
    }

    /** Returns a scanner for one body framed as {@code framing}. */
    public static UsageScanner of(Framing framing) {
        return new UsageScanner(java.util.Objects.requireNonNull(framing, "framing"));
    }

    /**
     * Returns the scanner for a response of {@code contentType} (a {@code Content-Type} field value):
     * {@link Framing#JSON} for {@code application/json} and {@code +json} types (RFC 6839),
     * {@link Framing#SSE} for {@code text/event-stream}; null for anything else (nothing to read).
     */
    public static @Nullable UsageScanner forContentType(@Nullable String contentType) {
        if (contentType == null) {
            return null;
        }
        int semi = contentType.indexOf(';');
        String type = (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
        if (type.equals("text/event-stream")) {
            return new UsageScanner(Framing.SSE);
        }
        if (type.equals("application/json") || type.endsWith("+json")) {
            return new UsageScanner(Framing.JSON);
        }
        return null;
    }

    /**
     * Also hands every string value read (from the body, or from each event's data) to {@code sink}, in
     * order; returns this scanner. Used by the red-flag scan, which reads the same decoded text.
     */
    public UsageScanner onStrings(StringSink sink) {
        this.strings = sink;
        return this;
    }

    /**
     * Also hands the data of every event that does not read as JSON (OpenAI's {@code [DONE]}, a stream of
     * plain text) to {@code sink}, whole, at the event's end (an event whose JSON breaks off after more
     * than {@value #MAX_HELD_EVENT_BYTES} bytes: from where the held bytes were dropped; once known to be
     * unreadable, in pieces as they come); returns this scanner. Only in {@link Framing#SSE}. Used by the
     * response's credential scan, so that what is not JSON is still read.
     */
    public UsageScanner onUnreadData(DataSink sink) {
        this.unread = sink;
        return this;
    }

    /** Reads the readable bytes of {@code bytes} (its position advances to the limit). */
    public void feed(ByteBuffer bytes) {
        if (bytes.hasArray()) {
            int off = bytes.arrayOffset() + bytes.position();
            int len = bytes.remaining();
            bytes.position(bytes.limit());
            feed(bytes.array(), off, len);
        } else {
            byte[] copy = new byte[bytes.remaining()];
            bytes.get(copy);
            feed(copy, 0, copy.length);
        }
    }

    /** Reads {@code b[off, off + len)}; the array may be reused once this returns. */
    public void feed(byte[] b, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (framing == Framing.JSON) {
            feedParser(b, off, len);
        } else {
            feedSse(b, off, len);
        }
    }

    /** Ends the body: a JSON document or a last event without its blank line is read to its end. */
    public void finish() {
        if (framing == Framing.SSE) {
            if (eventHasData) {
                endEvent();
            }
            return;
        }
        endParser();
    }

    /** Returns the model the response named, or null. */
    public String model() {
        return model;
    }

    /** Returns the input (prompt) tokens reported, or -1 when none were. */
    public long inputTokens() {
        return inputTokens;
    }

    /** Returns the output (completion) tokens reported, or -1 when none were. */
    public long outputTokens() {
        return outputTokens;
    }

    /** Answers whether any token count was reported. */
    public boolean hasUsage() {
        return inputTokens >= 0 || outputTokens >= 0;
    }

    // ---- server-sent events ------------------------------------------------------------------

    private void feedSse(byte[] b, int off, int len) {
        int end = off + len;
        int i = off;
        while (i < end) {
            byte c = b[i];
            if (afterCr && c == '\n') {
                afterCr = false;
                i++;
                continue;
            }
            afterCr = false;
            if (c == '\n' || c == '\r') {
                afterCr = c == '\r';
                endLine();
                i++;
                continue;
            }
            switch (lineState) {
                case 0 -> {
                    lineEmpty = false;
                    if (c == ':') {
                        lineState = isData() ? 1 : 3;
                    } else if (fieldLength < MAX_FIELD_NAME) {
                        fieldName[fieldLength++] = c;
                    } else {
                        fieldTooLong = true;
                    }
                    i++;
                }
                case 1 -> {
                    startData();
                    lineState = 2;
                    if (c == ' ') {
                        i++;
                    }
                }
                case 2 -> {
                    int stop = i;
                    while (stop < end && b[stop] != '\n' && b[stop] != '\r') {
                        stop++;
                    }
                    feedParser(b, i, stop - i);
                    hold(b, i, stop - i);
                    i = stop;
                }
                default -> {
                    while (i < end && b[i] != '\n' && b[i] != '\r') {
                        i++;
                    }
                }
            }
        }
    }

    /** Holds an event's data bytes for {@link #unread} (SSE only, when a sink is set). */
    private void hold(byte[] b, int off, int len) {
        if (unread == null || len == 0) {
            return;
        }
        if (eventDataLength + len > MAX_HELD_EVENT_BYTES) {
            if (eventUnreadable) {
                // known not to be JSON: hand on what is held, keep holding the rest
                unread.data(eventData, 0, eventDataLength, false);
            }
            eventDataLength = 0;
            if (len > MAX_HELD_EVENT_BYTES) {
                if (eventUnreadable) {
                    unread.data(b, off, len, false);
                }
                return;
            }
        }
        if (eventData == null || eventData.length < eventDataLength + len) {
            eventData = java.util.Arrays.copyOf(eventData == null ? new byte[0] : eventData,
                    Math.min(MAX_HELD_EVENT_BYTES, Math.max(1024, 2 * (eventDataLength + len))));
        }
        System.arraycopy(b, off, eventData, eventDataLength, len);
        eventDataLength += len;
    }

    private boolean isData() {
        return !fieldTooLong && fieldLength == 4 && fieldName[0] == 'd' && fieldName[1] == 'a'
                && fieldName[2] == 't' && fieldName[3] == 'a';
    }

    private void startData() {
        if (eventHasData) {
            // Data lines of one event join with a line feed, which JSON reads as whitespace.
            feedParser(new byte[] {'\n'}, 0, 1);
            hold(new byte[] {'\n'}, 0, 1);
        } else {
            eventDataLength = 0;
            eventUnreadable = false;
            eventHasData = true;
            parser = newParser();
            parserFailed = false;
        }
    }

    private void endLine() {
        if (lineEmpty) {
            if (eventHasData) {
                endEvent();
            }
        } else if (lineState == 0 && isData()) {
            // "data" with no colon: an empty data line
            startData();
        } else if (lineState == 1) {
            startData();
        }
        lineState = 0;
        fieldLength = 0;
        fieldTooLong = false;
        lineEmpty = true;
    }

    private void endEvent() {
        endParser();
        if (unread != null && eventUnreadable) {
            unread.data(eventData == null ? new byte[0] : eventData, 0, eventDataLength, true);
        }
        eventDataLength = 0;
        eventHasData = false;
        parser = null;
    }

    // ---- JSON --------------------------------------------------------------------------------

    private static JsonParser newParser() {
        try {
            return JSON.createNonBlockingByteArrayParser();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private void feedParser(byte[] b, int off, int len) {
        if (parser == null || parserFailed || len == 0) {
            return;
        }
        try {
            ((ByteArrayFeeder) parser.getNonBlockingInputFeeder()).feedInput(b, off, off + len);
            drain();
        } catch (IOException | RuntimeException e) {
            eventUnreadable = true;
            fail();
        }
    }

    private void endParser() {
        if (parser == null || parserFailed) {
            return;
        }
        try {
            ((ByteArrayFeeder) parser.getNonBlockingInputFeeder()).endOfInput();
            drain();
        } catch (IOException | RuntimeException e) {
            // what was read before stays
            eventUnreadable = true;
        }
        fail();
    }

    private void fail() {
        parserFailed = true;
        try {
            parser.close();
        } catch (IOException ignored) {
            // nothing held
        }
    }

    private void drain() throws IOException {
        JsonToken token;
        while ((token = parser.nextToken()) != null && token != JsonToken.NOT_AVAILABLE) {
            if (token == JsonToken.VALUE_NUMBER_INT || token == JsonToken.VALUE_STRING) {
                onValue(token);
            }
        }
    }

    private void onValue(JsonToken token) throws IOException {
        JsonStreamContext field = parser.getParsingContext();
        if (strings != null && token == JsonToken.VALUE_STRING) {
            strings.accept(field.inObject() ? field.getCurrentName() : null, parser.getText());
        }
        if (!field.inObject()) {
            return;
        }
        String name = field.getCurrentName();
        JsonStreamContext holder = field.getParent();
        String parent = holder == null || holder.inRoot() ? null : holder.getCurrentName();
        JsonStreamContext above = holder == null || holder.inRoot() ? null : holder.getParent();
        if (above != null && !above.inRoot() && !above.inObject()) {
            return;
        }
        String grand = above == null || above.inRoot() ? null : above.getCurrentName();
        if (above != null && !above.inRoot() && above.getParent() != null && !above.getParent().inRoot()) {
            return; // deeper than three levels
        }
        if (token == JsonToken.VALUE_STRING) {
            onString(name, parent, grand);
        } else {
            onCount(name, parent, grand);
        }
    }

    private void onString(String name, @Nullable String parent, @Nullable String grand) throws IOException {
        if (grand != null) {
            return;
        }
        boolean envelope = parent == null || parent.equals("response") || parent.equals("message");
        if (envelope && "model".equals(name)) {
            model = parser.getText();
            modelFromVersion = false;
        } else if (parent == null && "modelVersion".equals(name) && (model == null || modelFromVersion)) {
            model = parser.getText();
            modelFromVersion = true;
        }
    }

    private void onCount(@Nullable String name, @Nullable String parent, @Nullable String grand) throws IOException {
        if (parent == null || name == null) {
            return;
        }
        boolean usage = parent.equals("usage")
                && (grand == null || grand.equals("response") || grand.equals("message"));
        boolean gemini = grand == null && parent.equals("usageMetadata");
        if (!usage && !gemini) {
            return;
        }
        if (parser.getNumberType() != JsonParser.NumberType.INT && parser.getNumberType() != JsonParser.NumberType.LONG) {
            return;
        }
        long n = parser.getLongValue();
        if (n < 0) {
            return;
        }
        if (usage) {
            switch (name) {
                case "prompt_tokens", "input_tokens" -> inputTokens = n;
                case "completion_tokens", "output_tokens" -> outputTokens = n;
                default -> { }
            }
        } else {
            switch (name) {
                case "promptTokenCount" -> inputTokens = n;
                case "candidatesTokenCount" -> outputTokens = n;
                default -> { }
            }
        }
    }
}
