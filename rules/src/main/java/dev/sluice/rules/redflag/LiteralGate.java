package dev.sluice.rules.redflag;

import java.util.ArrayList;
import java.util.List;

/**
 * The red-flag scan's prefilter: every rule's {@link Gated} literals (and the reference collector's)
 * in one table keyed by first character, matched ASCII-case-insensitively in one pass over a batch,
 * together with the base64 / hex run check of {@code encoded_shell}. {@link #scan} answers, per rule,
 * whether its detector could match the batch; it never answers no when the detector's regex could match
 * (a non-ASCII character is compared by its {@link Character#toLowerCase(char)} form, as the old
 * {@code toLowerCase(Locale.ROOT)} prefilter did). Immutable; {@link #scan} allocates only its answer.
 */
final class LiteralGate {

    private static final int MIN_RUN = 16;

    /** Per first character (lowercase ASCII): the literals starting with it, as char arrays. */
    private final char[][][] byFirst = new char[128][][];
    /** Parallel to {@link #byFirst}: the slot (rule index, or rules.size() for the collector) of each literal. */
    private final int[][] slotByFirst = new int[128][];
    private final boolean[] always;
    private final boolean[] runs;
    private final boolean anyRuns;
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
        for (int c = 0; c < 128; c++) {
            if (!lits.get(c).isEmpty()) {
                byFirst[c] = lits.get(c).toArray(char[][]::new);
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
     * Returns, for each rule index (and at {@code rules.size()} for the reference collector), whether the
     * detector must run on {@code text}.
     */
    boolean[] scan(CharSequence text) {
        boolean[] open = always.clone();
        int n = text.length();
        int run = 0;
        boolean allHex = true;
        boolean upper = false;
        boolean runSeen = !anyRuns;
        for (int i = 0; i < n; i++) {
            char c = text.charAt(i);
            if (!runSeen) {
                boolean b64 = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                        || c == '+' || c == '/';
                if (b64) {
                    if (run == 0) {
                        allHex = true;
                        upper = false;
                    }
                    run++;
                    allHex &= (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
                    upper |= c >= 'A' && c <= 'Z';
                    if (run >= MIN_RUN && (allHex || upper)) {
                        runSeen = true;
                    }
                } else {
                    run = 0;
                }
            }
            int lc = lower(c);
            if (lc >= 128) {
                continue;
            }
            char[][] cands = byFirst[lc];
            if (cands == null) {
                continue;
            }
            int[] owner = slotByFirst[lc];
            for (int k = 0; k < cands.length; k++) {
                if (!open[owner[k]] && at(text, i, cands[k])) {
                    open[owner[k]] = true;
                }
            }
        }
        if (runSeen && anyRuns) {
            for (int s = 0; s < slots; s++) {
                open[s] |= runs[s];
            }
        }
        return open;
    }

    private static boolean at(CharSequence text, int i, char[] lit) {
        if (i + lit.length > text.length()) {
            return false;
        }
        for (int j = 1; j < lit.length; j++) {
            if (lower(text.charAt(i + j)) != lit[j]) {
                return false;
            }
        }
        return true;
    }
}
