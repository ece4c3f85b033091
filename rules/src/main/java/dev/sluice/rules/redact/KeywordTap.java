package dev.sluice.rules.redact;

/**
 * Receives the {@link TapKeyword}s a {@link StreamingRedactor} finds (see {@link DetectorSet#withTap} and
 * {@link DetectorSet#newRedactor(BodyFormat, RedactionAction, long, KeywordTap)}): the redactor's one
 * keyword scan finds them together with the detectors' keywords, and for each hit (or group of nearby
 * hits in one JSON string) hands over the decoded text of that string around them. A plain-text redactor
 * ({@link BodyFormat#PLAIN}, fed decoded text such as a response's) hands over the text around the hits,
 * never marked as a string's start or end. Called on the thread that feeds the redactor, during
 * {@code feed}, {@code settleTap} and {@code finish}; every hit is reported once, except that
 * {@link StreamingRedactor#settleTap} reads out hits whose text is still arriving (they come again later
 * with more), in no guaranteed order across calls.
 */
public interface KeywordTap {

    /**
     * Hits in one JSON string value (never a member name), or in plain text: {@code text} is its decoded text (escapes undone)
     * from at most {@link TapKeyword#charsBefore()} before the first hit to at most
     * {@link TapKeyword#charsAfter()} after the last one's start, cut at the string's quotes.
     *
     * @param text the decoded text (not retained by the redactor: valid after the call)
     * @param at where each hit's keyword starts in {@code text}, ascending (read {@code count} entries)
     * @param keyword each hit's index into the tap keywords of the {@link DetectorSet}
     * @param count number of hits
     * @param stringStart whether {@code text} begins where the JSON string does
     * @param stringEnd whether {@code text} ends where the JSON string does
     */
    void onString(String text, int[] at, int[] keyword, int count, boolean stringStart, boolean stringEnd);

    /**
     * Asked at each hit found in the raw bytes, before the hit is kept: false drops it (nothing around it
     * can matter: a cheap look at the bytes, or the tap has no more use for the keyword). {@code raw} is
     * the body's raw JSON (or, for a plain-text redactor, the text), {@code raw[at]} the keyword's first
     * byte and {@code raw[0, limit)} what has arrived; in JSON a backslash there begins an escape (where
     * the decoded text differs, answer true). The default keeps every hit.
     */
    default boolean wants(int keyword, byte[] raw, int at, int limit) {
        return true;
    }
}
