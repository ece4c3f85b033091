package dev.sluice.rules.internal;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A YAML document as a small tree whose every node and key remembers its line and column, read with
 * Jackson's streaming {@link YAMLParser} (token locations are 1-based). Not public API.
 *
 * <p>Refused while reading: duplicate keys and aliases ({@code *name}). Non-string keys are read as
 * their text. Only the first document of a stream is read; a second one is an error.
 */
public final class YamlTree {

    private YamlTree() {
    }

    /** A 1-based position in the source; 0 when unknown. */
    public record Loc(int line, int column) {
        static Loc of(@Nullable JsonLocation l) {
            return l == null ? new Loc(0, 0) : new Loc(Math.max(l.getLineNr(), 0), Math.max(l.getColumnNr(), 0));
        }
    }

    /** Any node. */
    public sealed interface Node permits MapNode, ListNode, ScalarNode {
        Loc loc();
    }

    /** A mapping key with its location and value. */
    public record Entry(String key, Loc keyLoc, Node value) {
    }

    /** A mapping, in document order. */
    public record MapNode(Loc loc, Map<String, Entry> entries) implements Node {
        public MapNode {
            entries = Collections.unmodifiableMap(new LinkedHashMap<>(entries));
        }
    }

    /** A sequence. */
    public record ListNode(Loc loc, List<Node> items) implements Node {
        public ListNode {
            items = List.copyOf(items);
        }
    }

    /**
     * A scalar with the token type Jackson gave it (e.g. {@link JsonToken#VALUE_NUMBER_INT},
     * {@link JsonToken#VALUE_NULL}) and its text as written.
     */
    public record ScalarNode(Loc loc, JsonToken token, @Nullable String text) implements Node {
        public boolean isNull() {
            return token == JsonToken.VALUE_NULL;
        }
    }

    /** A problem found while reading. */
    public record Problem(Loc loc, String message) {
    }

    /**
     * Reads {@code yaml}.
     *
     * @param problems receives every problem found
     * @return the root node, or null when the text is empty or could not be read at all
     */
    public static @Nullable Node read(String yaml, List<Problem> problems) {
        YAMLFactory factory = YAMLFactory.builder().build();
        try (JsonParser parser = factory.createParser(yaml)) {
            JsonToken first = parser.nextToken();
            if (first == null) {
                problems.add(new Problem(new Loc(1, 1), "empty document (expected: a mapping with version: 1)"));
                return null;
            }
            Node root = readValue(parser, problems);
            JsonToken next = parser.nextToken();
            if (next != null) {
                problems.add(new Problem(Loc.of(parser.currentTokenLocation()),
                        "more than one YAML document (expected: exactly one)"));
            }
            return root;
        } catch (StreamReadException e) {
            problems.add(new Problem(Loc.of(e.getLocation()), "YAML syntax: " + firstLine(e.getOriginalMessage())));
            return null;
        } catch (IOException e) {
            problems.add(new Problem(new Loc(0, 0), "YAML: " + firstLine(e.getMessage())));
            return null;
        }
    }

    private static Node readValue(JsonParser parser, List<Problem> problems) throws IOException {
        Loc loc = Loc.of(parser.currentTokenLocation());
        if (parser instanceof YAMLParser && ((YAMLParser) parser).isCurrentAlias()) {
            problems.add(new Problem(loc, "YAML aliases are not supported (expected: the value written out)"));
            return new ScalarNode(loc, JsonToken.VALUE_NULL, null); // reported once, not again as a type error
        }
        JsonToken token = parser.currentToken();
        switch (token) {
            case START_OBJECT: {
                Map<String, Entry> entries = new LinkedHashMap<>();
                while (parser.nextToken() == JsonToken.FIELD_NAME) {
                    String key = parser.currentName();
                    Loc keyLoc = Loc.of(parser.currentTokenLocation());
                    parser.nextToken();
                    Node value = readValue(parser, problems);
                    if (entries.containsKey(key)) {
                        problems.add(new Problem(keyLoc, "duplicate key \"" + key + "\""));
                    } else {
                        entries.put(key, new Entry(key, keyLoc, value));
                    }
                }
                return new MapNode(loc, entries);
            }
            case START_ARRAY: {
                List<Node> items = new ArrayList<>();
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    items.add(readValue(parser, problems));
                }
                return new ListNode(loc, items);
            }
            default:
                return new ScalarNode(loc, token, token == JsonToken.VALUE_NULL ? null : parser.getText());
        }
    }

    private static String firstLine(@Nullable String s) {
        if (s == null) {
            return "unreadable";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
