package dev.sluice.certs.internal;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads and writes the one JSON shape Sluice's pin records use (RFC 8259): a single object whose values
 * are strings or arrays of strings. Strings may use every RFC 8259 escape. Anything else (numbers,
 * nesting, duplicate keys, trailing text) is rejected, so a hand-edited file that would mean something
 * else is an error, not a guess.
 */
public final class FlatJson {

    private final String text;
    private int pos;

    private FlatJson(String text) {
        this.text = text;
    }

    /**
     * Parses {@code text}; values are {@link String} or {@code List<String>}, in file order.
     *
     * @throws IllegalArgumentException naming the offset of the first error
     */
    public static Map<String, Object> parse(String text) {
        FlatJson p = new FlatJson(text);
        Map<String, Object> out = new LinkedHashMap<>();
        p.ws();
        p.expect('{');
        p.ws();
        if (p.peek() == '}') {
            p.pos++;
        } else {
            while (true) {
                p.ws();
                String key = p.string();
                p.ws();
                p.expect(':');
                p.ws();
                Object value = p.peek() == '[' ? p.array() : p.string();
                if (out.put(key, value) != null) {
                    throw p.error("duplicate key '" + key + "'");
                }
                p.ws();
                char c = p.next();
                if (c == '}') {
                    break;
                }
                if (c != ',') {
                    throw p.error("expected ',' or '}'");
                }
            }
        }
        p.ws();
        if (p.pos != text.length()) {
            throw p.error("trailing text");
        }
        return out;
    }

    /** Returns {@code s} as a JSON string literal, quoted and escaped. */
    public static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    private List<String> array() {
        expect('[');
        List<String> out = new ArrayList<>();
        ws();
        if (peek() == ']') {
            pos++;
            return out;
        }
        while (true) {
            ws();
            out.add(string());
            ws();
            char c = next();
            if (c == ']') {
                return out;
            }
            if (c != ',') {
                throw error("expected ',' or ']'");
            }
        }
    }

    private String string() {
        expect('"');
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return sb.toString();
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"': case '\\': case '/': sb.append(e); break;
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u':
                    if (pos + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    try {
                        sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    pos += 4;
                    break;
                default:
                    throw error("bad escape '\\" + e + "'");
            }
        }
    }

    private void ws() {
        while (pos < text.length()) {
            char c = text.charAt(pos);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            pos++;
        }
    }

    private char peek() {
        if (pos >= text.length()) {
            throw error("unexpected end");
        }
        return text.charAt(pos);
    }

    private char next() {
        char c = peek();
        pos++;
        return c;
    }

    private void expect(char c) {
        if (next() != c) {
            pos--;
            throw error("expected '" + c + "'");
        }
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON at offset " + pos + ": " + what
                + " (expected: one object of strings and string arrays)");
    }
}
