package dev.sluice.rules.redact;

/**
 * A cheap test a detector may run at a keyword hit before its pattern: when it answers false the
 * pattern is not run there. It must never answer false where the pattern could match (a false positive
 * only costs a pattern run; a false negative would let a credential through).
 *
 * <p>In JSON bodies the {@link StreamingRedactor} may also run it on raw JSON text in which quotes are
 * written {@code \"} (every backslash before {@code limit} is such an escape): the answer there must be
 * true wherever it would be true for the same text without those backslashes. The built-in prechecks
 * treat a backslash and a quote alike (both end names and values, and a backslash before a quote is
 * skipped), so they qualify.
 */
@FunctionalInterface
public interface Precheck {

    /**
     * Answers whether the detector's pattern could match at the keyword starting at {@code text[start]}.
     *
     * @param text decoded text, one byte per character
     * @param start index of the keyword's first byte
     * @param limit index just after the last available byte; bytes beyond it are not yet known
     */
    boolean mayMatch(byte[] text, int start, int limit);

    /**
     * For {@code <label><name chars>[\]["'][spaces](: | = | := | =>)} assignments: skips up to
     * {@code maxNameChars} of [A-Za-z0-9_.-], an optional backslash and quote and up to four spaces, and
     * answers whether an assignment character ({@code :} or {@code =}) follows.
     */
    static Precheck assignment(int maxNameChars) {
        return assignment(maxNameChars, 0);
    }

    /**
     * As {@link #assignment(int)}, and then also requires a value of at least {@code minValueChars}
     * characters: after the assignment ({@code :}, {@code =}, {@code :=} or {@code =>}), up to four
     * spaces, an optional backslash and an optional quote, that many characters none of which is
     * whitespace or one of {@code "'`,;(){}[]<>$\}. Sound for patterns whose value is written
     * {@code \s{0,4}+\\?["']?} then characters of that set (or a subset of it) after the assignment.
     */
    static Precheck assignment(int maxNameChars, int minValueChars) {
        return assignment(maxNameChars, minValueChars, false);
    }

    /**
     * As {@link #assignment(int, int)}; with {@code identifierValuesRejected} it also answers false when
     * the value is a dotted code identifier ({@code os.environ.get}, {@code settings.api_key}: letters and
     * underscores, single dots between them, at most 17 parts, under 128 characters) that ends before
     * {@code limit}. Sound only for detectors whose validator rejects every such secret, as
     * {@link BuiltinDetectors#GENERIC_SECRET}'s does: its pattern's secret is then a prefix of that
     * identifier, itself an identifier.
     */
    static Precheck assignment(int maxNameChars, int minValueChars, boolean identifierValuesRejected) {
        return (text, start, limit) -> {
            int i = start;
            int nameEnd = Math.min(limit, start + maxNameChars);
            while (i < nameEnd && isNameChar(text[i])) {
                i++;
            }
            if (i < limit && text[i] == '\\') {
                i++;
            }
            if (i < limit && (text[i] == '"' || text[i] == '\'')) {
                i++;
            }
            for (int k = 0; k < 4 && i < limit && isSpace(text[i]); k++) {
                i++;
            }
            if (i >= limit) {
                return true;
            }
            byte op = text[i];
            if (op != ':' && op != '=') {
                return false;
            }
            if (minValueChars == 0) {
                return true;
            }
            int j = i + 1;
            if (j >= limit) {
                return true;
            }
            // ":=" and "=>" may be one operator or ':' / '=' followed by a value starting with '=' / '>'
            boolean two = (op == ':' && text[j] == '=') || (op == '=' && text[j] == '>');
            return value(text, j, limit, minValueChars, identifierValuesRejected)
                    || (two && value(text, j + 1, limit, minValueChars, identifierValuesRejected));
        };
    }

    private static boolean value(byte[] text, int i, int limit, int minValueChars, boolean identifierValuesRejected) {
        return valueFollows(text, i, limit, minValueChars)
                && !(identifierValuesRejected && identifierValue(text, valueStart(text, i, limit), limit));
    }

    /** Skips up to four spaces, an optional backslash and an optional quote, as {@link #valueFollows}. */
    private static int valueStart(byte[] text, int i, int limit) {
        for (int k = 0; k < 4 && i < limit && isSpace(text[i]); k++) {
            i++;
        }
        if (i < limit && text[i] == '\\') {
            i++;
        }
        if (i < limit && (text[i] == '"' || text[i] == '\'')) {
            i++;
        }
        return i;
    }

    /**
     * Answers whether the run of value characters at {@code i} is a dotted identifier that ends (at a
     * non-value character) before {@code limit} and within 128 characters.
     */
    private static boolean identifierValue(byte[] text, int i, int limit) {
        int end = Math.min(limit, i + 128);
        int parts = 1;
        boolean partStart = true;
        for (; i < end; i++) {
            byte b = text[i];
            if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || b == '_') {
                partStart = false;
            } else if (b == '.' && !partStart) {
                partStart = true;
                parts++;
            } else {
                return !partStart && parts <= 17 && !isValueChar(b);
            }
        }
        return false;
    }

    /** Skips up to four spaces, an optional backslash and quote; answers whether {@code n} value characters follow. */
    private static boolean valueFollows(byte[] text, int i, int limit, int n) {
        for (int k = 0; k < 4 && i < limit && isSpace(text[i]); k++) {
            i++;
        }
        if (i < limit && text[i] == '\\') {
            i++;
        }
        if (i < limit && (text[i] == '"' || text[i] == '\'')) {
            i++;
        }
        int end = i + n;
        for (; i < end; i++) {
            if (i >= limit) {
                return true;
            }
            if (!isValueChar(text[i])) {
                return false;
            }
        }
        return true;
    }

    private static boolean isValueChar(byte b) {
        switch (b) {
            case ' ': case '\t': case '\n': case 0x0b: case '\f': case '\r':
            case '"': case '\'': case '`': case ',': case ';': case '(': case ')': case '{': case '}':
            case '[': case ']': case '<': case '>': case '$': case '\\':
                return false;
            default:
                return true;
        }
    }

    private static boolean isNameChar(byte b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' || b == '.' || b == '-';
    }

    private static boolean isSpace(byte b) {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == 0x0b || b == 0x0c;
    }
}
