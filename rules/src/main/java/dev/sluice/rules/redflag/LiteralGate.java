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
 *
 * <p>Where {@code jdk.incubator.vector} runs 256-bit vectors, {@link GateVectors} classifies 16 characters
 * at a time (where a base64 run breaks, where a literal could start) and only those positions are read
 * one by one; elsewhere one scalar loop does the same with a table of literal-starting character pairs.
 * Both record exactly the same hits.
 */
final class LiteralGate {

    static final int MIN_RUN = 16;
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
    /**
     * Entry {@code 128 * a + b} is set when some literal starts with the lowercase ASCII pair {@code a b}, or
     * with {@code a} alone (a one-character literal sets every {@code b}); a position whose lowercase pair
     * is not set cannot start a literal, so the candidates are not compared there. Non-ASCII second
     * characters fall back to the candidates.
     */
    private final boolean[] pairs = new boolean[128 * 128];

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

    /** Whether the SIMD classification runs: the incubator module is there and 256-bit vectors are. */
    static final boolean VECTOR_AVAILABLE = vectorAvailable();

    private static boolean vectorAvailable() {
        if (Boolean.getBoolean("sluice.redact.scalar")
                || ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return false;
        }
        try {
            return GateVectors.supported();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** The SIMD classifier, or null for the scalar loop alone. */
    private final GateVectors vectors;

    LiteralGate(List<RedFlagRule> rules, RedFlagDetector collector) {
        this(rules, collector, VECTOR_AVAILABLE);
    }

    /** For tests: {@code vector == false} runs the scalar loop even where SIMD is available. */
    LiteralGate(List<RedFlagRule> rules, RedFlagDetector collector, boolean vector) {
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
                if (low.length() == 1) {
                    for (int b = 0; b < 128; b++) {
                        setPair(low.charAt(0), b);
                    }
                } else {
                    setPair(low.charAt(0), low.charAt(1));
                }
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
        vectors = vector && VECTOR_AVAILABLE ? new GateVectors(first) : null;
    }

    private void setPair(int a, int b) {
        pairs[(a << 7) | b] = true;
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
        // Branch-light: a run ends at a character outside the base64 alphabet (checked only when it is
        // long enough), and a literal can start only where the lowercase pair of characters is one a
        // literal starts with (a bitmap), so ordinary text takes no unpredictable branch per character.
        boolean runsWanted = anyRuns;
        int last = -1;
        int i = 0;
        if (vectors != null) {
            long state = vectors.scan(this, open, a, n, runsWanted, last);
            i = (int) (state >>> 32);
            last = (int) state;
        }
        for (; i < n; i++) {
            char c = a[i];
            if (runsWanted) {
                int k = c < 128 ? CLASS[c] : 0;
                boolean breaks = (k & B64) == 0;
                if (breaks & (i - last > MIN_RUN)) {
                    run(open, a, last + 1, i);
                }
                last = breaks ? i : last;
            }
            candidate(open, a, n, i);
        }
        if (runsWanted && n - last > MIN_RUN) {
            run(open, a, last + 1, n);
        }
        return open;
    }

    /** Compares the literals that may start at {@code a[i]} and records those found there. */
    void candidate(Gated.Hits[] open, char[] a, int n, int i) {
        char c = a[i];
        int lc;
        if (c < 128) {
            lc = LOWER[c];
            char d = i + 1 < n ? a[i + 1] : 0;
            if (d < 128 ? !pairs[(lc << 7) | LOWER[d]] : !first[lc]) {
                return;
            }
        } else {
            lc = lower(c);
            if (lc >= 128 || !first[lc]) {
                return;
            }
        }
        char[][] cands = byFirst[lc];
        if (cands == null) {
            return;
        }
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

    /**
     * Records the base64-alphabet run {@code [start, end)} (at least {@value #MIN_RUN} long) for every
     * detector gated on runs, when it is made only of hex digits or holds a capital.
     */
    void run(Gated.Hits[] open, char[] a, int start, int end) {
        boolean allHex = true;
        boolean upper = false;
        for (int i = start; i < end; i++) {
            int k = CLASS[a[i]];
            allHex &= (k & HEX) != 0;
            upper |= (k & UPPER) != 0;
        }
        if (!allHex && !upper) {
            return;
        }
        for (int s = 0; s < slots; s++) {
            if (runs[s]) {
                hits(open, s).run(start, end);
            }
        }
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
