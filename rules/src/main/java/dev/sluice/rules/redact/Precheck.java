package dev.sluice.rules.redact;

/**
 * A cheap test a detector may run at a keyword hit before its pattern: when it answers false the
 * pattern is not run there. It must never answer false where the pattern could match (a false positive
 * only costs a pattern run; a false negative would let a credential through).
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
            return valueFollows(text, j, limit, minValueChars) || (two && valueFollows(text, j + 1, limit, minValueChars));
        };
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
