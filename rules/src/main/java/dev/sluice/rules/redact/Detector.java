package dev.sluice.rules.redact;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One credential format: where to look ({@link #keywords}), what it looks like ({@link #pattern}) and
 * how sure a match must be ({@link #minEntropy}, {@link #validator}).
 *
 * <p>The scan contract the redactor relies on (checked by {@link #Detector the constructor} where it
 * can be):
 * <ul>
 *   <li>every match contains one of the keywords, compared with ASCII case folding — a region of text
 *       without any keyword is never given to the pattern;</li>
 *   <li>a match starts at most {@link #maxCharsBeforeKeyword} characters before the keyword that
 *       triggered it (0: the keyword <em>begins</em> the match, and the pattern is applied with
 *       {@link java.util.regex.Matcher#lookingAt()} at the keyword, the cheapest form);</li>
 *   <li>a match is at most {@link #maxLength} characters long; this bounds the carry-over window of the
 *       {@link StreamingRedactor} and the region the pattern is applied to.</li>
 * </ul>
 * Patterns are applied to text where each byte is one {@code char} (ISO-8859-1 view of the bytes):
 * credential formats are ASCII. Patterns should use bounded quantifiers only, with no nested unbounded
 * repetition, because the text they scan is attacker-influenced.
 *
 * @param id stable name used in {@code [REDACTED:<id>]}, audit records and metrics labels;
 *           {@code [a-z0-9][a-z0-9-]{0,63}}
 * @param description one line, for {@code sluice check} and docs
 * @param keywords lowercase printable ASCII strings without {@code "} or a backslash (so that a keyword in
 *                 JSON text is written literally or with {@code &#92;u} / {@code \/} escapes, see
 *                 {@link StreamingRedactor}), at least one, each 2..64 bytes; the one exception is a
 *                 two-byte keyword of a backslash and a letter (an escape such as {@code \x}), which
 *                 the redactor finds in JSON where the backslash is itself escaped
 * @param pattern the format
 * @param secretGroup capture group holding the secret (the part replaced), 0 for the whole match
 * @param minEntropy minimum Shannon entropy of the secret in bits per character; 0 for no gate
 * @param validator extra check on the secret (a checksum, a placeholder filter); {@code null} for none
 * @param maxCharsBeforeKeyword how far before its keyword a match may start (0 = keyword is the prefix)
 * @param maxLength longest match in characters (bytes), 1..65536
 * @param keywordAtWordStart when true a keyword hit counts only where the byte before it is not an
 *                           ASCII letter or digit (cuts hits such as "sk" inside "task")
 * @param precheck cheap test at a keyword hit before the pattern runs; {@code null} for none
 */
public record Detector(String id, String description, List<String> keywords, Pattern pattern, int secretGroup,
                       double minEntropy, Predicate<String> validator, int maxCharsBeforeKeyword, int maxLength,
                       boolean keywordAtWordStart, @Nullable Precheck precheck) {

    /** Largest {@link #maxLength} accepted. */
    public static final int MAX_LENGTH_LIMIT = 65536;

    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");

    /**
     * Validates the components.
     *
     * @throws IllegalArgumentException on a bad id, an empty or non-lowercase keyword list, a secret
     *                                  group the pattern does not have, or out-of-range lengths
     */
    public Detector {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(pattern, "pattern");
        if (!ID.matcher(id).matches()) {
            throw new IllegalArgumentException("id: " + id + " (expected: " + ID.pattern() + ")");
        }
        keywords = List.copyOf(keywords);
        if (keywords.isEmpty()) {
            throw new IllegalArgumentException(id + ": keywords: empty (expected: at least one keyword)");
        }
        for (String k : keywords) {
            if (k.length() < 2 || k.length() > 64 || !k.equals(k.toLowerCase(Locale.ROOT)) || !isKeywordText(k)) {
                throw new IllegalArgumentException(id + ": keyword \"" + k
                        + "\" (expected: 2..64 lowercase printable ASCII characters, no quote or backslash)");
            }
        }
        int groups = pattern.matcher("").groupCount();
        if (secretGroup < 0 || secretGroup > groups) {
            throw new IllegalArgumentException(id + ": secretGroup: " + secretGroup + " (expected: 0.." + groups + ")");
        }
        if (minEntropy < 0 || minEntropy > 8) {
            throw new IllegalArgumentException(id + ": minEntropy: " + minEntropy + " (expected: 0..8 bits per character)");
        }
        if (maxLength < 1 || maxLength > MAX_LENGTH_LIMIT) {
            throw new IllegalArgumentException(id + ": maxLength: " + maxLength + " (expected: 1.." + MAX_LENGTH_LIMIT + ")");
        }
        if (maxCharsBeforeKeyword < 0 || maxCharsBeforeKeyword > maxLength) {
            throw new IllegalArgumentException(id + ": maxCharsBeforeKeyword: " + maxCharsBeforeKeyword
                    + " (expected: 0.." + maxLength + ")");
        }
    }

    /** A detector without a {@link Precheck}. */
    public Detector(String id, String description, List<String> keywords, Pattern pattern, int secretGroup,
                    double minEntropy, Predicate<String> validator, int maxCharsBeforeKeyword, int maxLength,
                    boolean keywordAtWordStart) {
        this(id, description, keywords, pattern, secretGroup, minEntropy, validator, maxCharsBeforeKeyword, maxLength,
                keywordAtWordStart, null);
    }

    /**
     * A detector defined in the policy ({@code redaction.custom}): the keyword may be anywhere in a match
     * of at most {@code maxLength} characters; no entropy gate.
     */
    public static Detector custom(String id, Pattern pattern, List<String> keywords, int maxLength) {
        return new Detector(id, "custom detector from the policy", keywords, pattern, 0, 0, null, maxLength, maxLength,
                false);
    }

    /**
     * Answers whether {@code secret} passes this detector's entropy gate and validator.
     */
    public boolean accepts(String secret) {
        if (minEntropy > 0 && shannonEntropy(secret) < minEntropy) {
            return false;
        }
        return validator == null || validator.test(secret);
    }

    /** Returns the Shannon entropy of {@code s} in bits per character (0 for an empty string). */
    public static double shannonEntropy(CharSequence s) {
        int n = s.length();
        if (n == 0) {
            return 0;
        }
        int[] counts = new int[256];
        char[] seen = new char[Math.min(n, 256)];
        int distinct = 0;
        for (int i = 0; i < n; i++) {
            int c = s.charAt(i) & 0xff;
            if (counts[c]++ == 0) {
                seen[distinct++] = (char) c;
            }
        }
        double h = 0;
        for (int i = 0; i < distinct; i++) {
            double p = (double) counts[seen[i]] / n;
            h -= p * Math.log(p);
        }
        return h / Math.log(2);
    }

    private static boolean isKeywordText(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '"' || (c == '\\' && !(i == 0 && s.length() == 2))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        return "Detector[" + id + "]";
    }
}
