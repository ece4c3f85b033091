package dev.sluice.rules.redflag;

import java.util.ArrayList;
import java.util.List;

/**
 * The red-flag scan's prefilter: every rule's {@link Gated} literals (and the reference collector's)
 * in one table keyed by first character, matched ASCII-case-insensitively in one pass over a batch,
 * together with the base64 / hex run check of {@code encoded_shell}. {@link #scan} answers, per rule,
 * whether its detector could match the batch; it never answers no when the detector's regex could match
 * (a non-ASCII character is compared by its {@link Character#toLowerCase(char)} form, as the old
 * {@code toLowerCase(Locale.ROOT)} prefilter did). Belongs to one scan (not thread-safe: it reuses a buffer).
 */
final class LiteralGate {

    private static final int MIN_RUN = 16;
    private static final int B64 = 1;
    private static final int HEX = 2;
    private static final int UPPER = 4;
    /** Per ASCII character: base64 alphabet, hex digit, capital. */
    private static final byte[] CLASS = new byte[128];
    /** Per ASCII character: its lower case. */
    private static final char[] LOWER = new char[128];

    static {
        for (char c = 0; c < 128; c++) {
            boolean upperCase = c >= 'A' && c <= 'Z';
            boolean b64 = upperCase || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
            boolean hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
            CLASS[c] = (byte) ((b64 ? B64 : 0) | (hex ? HEX : 0) | (upperCase ? UPPER : 0));
            LOWER[c] = upperCase ? (char) (c + 32) : c;
        }
    }

    /** Whether some literal starts with this lowercase ASCII character. */
    private final boolean[] first = new boolean[128];

    /** Per first character (lowercase ASCII): the literals starting with it, as char arrays. */
    private final char[][][] byFirst = new char[128][][];
    /** Parallel to {@link #byFirst}: the slot (rule index, or rules.size() for the collector) of each literal. */
    private final int[][] slotByFirst = new int[128][];
    private final boolean[] always;
    private final boolean[] runs;
    private final boolean anyRuns;
    private final boolean anyLiterals;
    /** The batch's characters, reused (the gate belongs to one scan, which is not thread-safe). */
    private char[] scratch = new char[0];
    private final int slots;

    LiteralGate(List<RedFlagRule> rules, RedFlagDetector collector) {
        slots = rules.size() + 1;
        always = new boolean[slots];
        runs = new boolean[slots];
        List<List<char[]>> lits = new ArrayList<>();
        List<List<Integer>> owners = new ArrayList<>();
        for (int c = 0; c < 128; c++) {
            lits.add(new ArrayList<>());
            owners.add(new ArrayList<>());
        }
        boolean r = false;
        for (int slot = 0; slot < slots; slot++) {
            RedFlagDetector d = slot < rules.size() ? rules.get(slot).detector() : collector;
            if (d == null) {
                continue;
            }
            if (!(d instanceof Gated g)) {
                always[slot] = true;
                continue;
            }
            runs[slot] = g.gateOnRuns();
            r |= runs[slot];
            String[] literals = g.gateLiterals();
            if (literals.length == 0 && !runs[slot]) {
                always[slot] = true;
            }
            for (String l : literals) {
                if (l.isEmpty() || !ascii(l)) {
                    always[slot] = true;
                    continue;
                }
                String low = l.toLowerCase(java.util.Locale.ROOT);
                lits.get(low.charAt(0)).add(low.toCharArray());
                owners.get(low.charAt(0)).add(slot);
            }
        }
        anyRuns = r;
        boolean l = false;
        for (List<char[]> each : lits) {
            l |= !each.isEmpty();
        }
        anyLiterals = l;
        for (int c = 0; c < 128; c++) {
            if (!lits.get(c).isEmpty()) {
                byFirst[c] = lits.get(c).toArray(char[][]::new);
                first[c] = true;
                slotByFirst[c] = owners.get(c).stream().mapToInt(Integer::intValue).toArray();
            }
        }
    }

    private static boolean ascii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 128) {
                return false;
            }
        }
        return true;
    }

    private static int lower(char c) {
        if (c >= 'A' && c <= 'Z') {
            return c + 32;
        }
        if (c < 128) {
            return c;
        }
        return Character.toLowerCase(c);
    }

    /**
     * Returns, for each rule index (and at {@code rules.size()} for the reference collector), null when the
     * detector cannot match {@code text}, else where its literals and runs occur ({@link #ALWAYS} for a
     * detector without a gate).
     */
    Gated.Hits[] scan(CharSequence text) {
        Gated.Hits[] open = new Gated.Hits[slots];
        for (int s = 0; s < slots; s++) {
            if (always[s]) {
                open[s] = ALWAYS;
            }
        }
        if (!anyRuns && !anyLiterals) {
            return open;
        }
        int n = text.length();
        if (scratch.length < n) {
            scratch = new char[Math.max(n, scratch.length * 2)];
        }
        char[] a = scratch;
        if (text instanceof StringBuilder sb) {
            sb.getChars(0, n, a, 0);
        } else {
            text.toString().getChars(0, n, a, 0);
        }
        int start = -1;
        boolean allHex = true;
        boolean upper = false;
        for (int i = 0; i <= n; i++) {
            char c = i < n ? a[i] : ' ';
            int k = c < 128 ? CLASS[c] : 0;
            if (anyRuns) {
                if ((k & B64) != 0) {
                    if (start < 0) {
                        start = i;
                        allHex = true;
                        upper = false;
                    }
                    allHex &= (k & HEX) != 0;
                    upper |= (k & UPPER) != 0;
                } else {
                    if (start >= 0 && i - start >= MIN_RUN && (allHex || upper)) {
                        for (int s = 0; s < slots; s++) {
                            if (runs[s]) {
                                hits(open, s).run(start, i);
                            }
                        }
                    }
                    start = -1;
                }
            }
            if (i == n) {
                break;
            }
            int lc = c < 128 ? LOWER[c] : lower(c);
            if (lc >= 128 || !first[lc]) {
                continue;
            }
            char[][] cands = byFirst[lc];
            int[] owner = slotByFirst[lc];
            for (int j = 0; j < cands.length; j++) {
                if (open[owner[j]] != ALWAYS && at(a, n, i, cands[j])) {
                    Gated.Hits h = hits(open, owner[j]);
                    // one entry per position: the longest literal there
                    if (h.literalCount > 0 && h.literals[2 * h.literalCount - 2] == i) {
                        h.literals[2 * h.literalCount - 1] = Math.max(h.literals[2 * h.literalCount - 1], cands[j].length);
                    } else {
                        h.literal(i, cands[j].length);
                    }
                }
            }
        }
        return open;
    }

    /** Marks a detector that has no gate: it reads the whole batch. */
    static final Gated.Hits ALWAYS = new Gated.Hits();

    private static Gated.Hits hits(Gated.Hits[] open, int slot) {
        if (open[slot] == null) {
            open[slot] = new Gated.Hits();
        }
        return open[slot];
    }

    private static boolean at(char[] text, int n, int i, char[] lit) {
        if (i + lit.length > n) {
            return false;
        }
        for (int j = 1; j < lit.length; j++) {
            if (lower(text[i + j]) != lit[j]) {
                return false;
            }
        }
        return true;
    }
}
