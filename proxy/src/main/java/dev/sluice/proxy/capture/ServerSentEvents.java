package dev.sluice.proxy.capture;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Reassembles a captured {@code text/event-stream} body (WHATWG HTML, "Server-sent events", section
 * 9.2.6 "Interpreting an event stream"): lines end with CRLF, LF or CR; {@code event:} names the event;
 * {@code data:} lines join with LF; a line starting with {@code :} is a comment; a blank line dispatches
 * the event (one with no data is dropped). A last event without its blank line (a cut body) is kept.
 */
final class ServerSentEvents {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** One event: its type ({@code null} for the default, {@code message}) and its data. */
    record Event(String event, String data) {
    }

    private ServerSentEvents() {
    }

    static List<Event> parse(String stream) {
        List<Event> out = new ArrayList<>();
        String type = null;
        StringBuilder data = null;
        int i = 0;
        int n = stream.length();
        while (i <= n) {
            int end = i;
            while (end < n && stream.charAt(end) != '\n' && stream.charAt(end) != '\r') {
                end++;
            }
            if (end == n && i == n) {
                break;
            }
            String line = stream.substring(i, end);
            if (end < n && stream.charAt(end) == '\r' && end + 1 < n && stream.charAt(end + 1) == '\n') {
                end++;
            }
            i = end + 1;
            if (line.isEmpty()) {
                if (data != null) {
                    out.add(new Event(type, data.toString()));
                }
                type = null;
                data = null;
                continue;
            }
            if (line.startsWith(":")) {
                continue;
            }
            int colon = line.indexOf(':');
            String field = colon < 0 ? line : line.substring(0, colon);
            String value = colon < 0 ? "" : line.substring(colon + 1);
            if (value.startsWith(" ")) {
                value = value.substring(1);
            }
            if (field.equals("event")) {
                type = value;
            } else if (field.equals("data")) {
                if (data == null) {
                    data = new StringBuilder(value);
                } else {
                    data.append('\n').append(value);
                }
            }
        }
        if (data != null) {
            out.add(new Event(type, data.toString()));
        }
        return out;
    }

    /**
     * Returns the generated text of the events, joined: Anthropic {@code delta.text}, OpenAI chat
     * {@code choices[].delta.content}, OpenAI responses {@code response.output_text.delta}'s {@code delta},
     * Gemini {@code candidates[].content.parts[].text}. Events whose data is not JSON add nothing.
     */
    static String text(List<Event> events) {
        StringBuilder out = new StringBuilder();
        for (Event e : events) {
            JsonNode node;
            try {
                node = MAPPER.readTree(e.data());
            } catch (IOException ex) {
                continue;
            }
            if (node == null || !node.isObject()) {
                continue;
            }
            JsonNode delta = node.get("delta");
            if (delta != null && delta.isObject() && delta.path("text").isTextual()) {
                out.append(delta.path("text").asText());
            } else if (delta != null && delta.isTextual() && node.path("type").asText().endsWith("output_text.delta")) {
                out.append(delta.asText());
            }
            for (JsonNode choice : node.path("choices")) {
                JsonNode content = choice.path("delta").path("content");
                if (content.isTextual()) {
                    out.append(content.asText());
                }
            }
            for (JsonNode candidate : node.path("candidates")) {
                for (JsonNode part : candidate.path("content").path("parts")) {
                    if (part.path("text").isTextual()) {
                        out.append(part.path("text").asText());
                    }
                }
            }
        }
        return out.toString();
    }
}
