package dev.sluice.rules.redact;

import java.util.Objects;

/**
 * A keyword a {@link StreamingRedactor} reports to a {@link KeywordTap} besides redacting (the red-flag
 * rules' literals, see {@code dev.sluice.rules.redflag.RedFlagFold}): found by the redactor's own keyword
 * scan and handed over with the decoded text around it (in a JSON body, of the JSON string around it).
 *
 * @param keyword lowercase printable ASCII, at least two bytes, without {@code "} or a backslash (matched
 *                with ASCII case folding, as detector keywords are)
 * @param charsBefore decoded characters before the keyword's start the tap reads (at most)
 * @param charsAfter decoded characters from the keyword's start the tap reads (at most)
 */
public record TapKeyword(String keyword, int charsBefore, int charsAfter) {

    /** Most characters either side a tap may ask for. */
    public static final int MAX_REACH = 4096;

    public TapKeyword {
        Objects.requireNonNull(keyword, "keyword");
        if (keyword.length() < 2) {
            throw new IllegalArgumentException("tap keyword \"" + keyword + "\": at least two bytes expected");
        }
        for (int i = 0; i < keyword.length(); i++) {
            char c = keyword.charAt(i);
            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || (c >= 'A' && c <= 'Z')) {
                throw new IllegalArgumentException("tap keyword \"" + keyword
                        + "\": lowercase printable ASCII without a quote or a backslash expected");
            }
        }
        if (charsBefore < 0 || charsBefore > MAX_REACH || charsAfter < keyword.length() || charsAfter > MAX_REACH) {
            throw new IllegalArgumentException("tap keyword \"" + keyword + "\": reach " + charsBefore + "/" + charsAfter);
        }
    }

    /** Answers whether {@code s} can be a tap keyword (see the record's parameters). */
    public static boolean allowed(String s) {
        if (s.length() < 2) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || (c >= 'A' && c <= 'Z')) {
                return false;
            }
        }
        return true;
    }
}
