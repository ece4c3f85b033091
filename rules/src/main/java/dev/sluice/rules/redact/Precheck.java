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
            return i >= limit || text[i] == ':' || text[i] == '=';
        };
    }

    private static boolean isNameChar(byte b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' || b == '.' || b == '-';
    }

    private static boolean isSpace(byte b) {
        return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == 0x0b || b == 0x0c;
    }
}
