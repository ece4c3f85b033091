package dev.sluice.rules.redact;

import java.util.Locale;

/** How a body is read by the {@link StreamingRedactor}. */
public enum BodyFormat {
    /** Bytes as they are. */
    PLAIN,
    /**
     * JSON: the content of strings is scanned decoded ({@code \n}, {@code \/}, {@code \"}, {@code \\},
     * {@code &#92;uXXXX} with surrogate pairs), and replacements are made inside strings so the output stays
     * valid JSON. Lenient: a body that is not valid JSON is still scanned.
     */
    JSON;

    /**
     * Picks the format for a {@code Content-Type} value: {@link #JSON} for {@code application/json},
     * any {@code +json} type (RFC 6839), {@code application/x-ndjson} and {@code text/event-stream}
     * (server-sent events whose data lines carry JSON); {@link #PLAIN} for anything else and for null.
     */
    public static BodyFormat forContentType(String contentType) {
        if (contentType == null) {
            return PLAIN;
        }
        String t = contentType.toLowerCase(Locale.ROOT);
        int semi = t.indexOf(';');
        if (semi >= 0) {
            t = t.substring(0, semi);
        }
        t = t.strip();
        if (t.equals("application/json") || t.endsWith("+json") || t.equals("application/x-ndjson")
                || t.equals("text/event-stream")) {
            return JSON;
        }
        return PLAIN;
    }
}
