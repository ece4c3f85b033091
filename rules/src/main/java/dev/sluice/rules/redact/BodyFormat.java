package dev.sluice.rules.redact;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

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
        String t = mediaType(contentType);
        if (t == null) {
            return PLAIN;
        }
        if (t.equals("application/json") || t.endsWith("+json") || t.equals("application/x-ndjson")
                || t.equals("text/event-stream")) {
            return JSON;
        }
        return PLAIN;
    }

    /**
     * Returns the media type of a {@code Content-Type} value (RFC 9110 section 8.3.1): lowercase, without
     * parameters or surrounding whitespace; null for null.
     */
    static @Nullable String mediaType(@Nullable String contentType) {
        if (contentType == null) {
            return null;
        }
        String t = contentType.toLowerCase(Locale.ROOT);
        int semi = t.indexOf(';');
        return (semi >= 0 ? t.substring(0, semi) : t).strip();
    }
}
