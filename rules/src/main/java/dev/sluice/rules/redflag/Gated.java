package dev.sluice.rules.redflag;

import java.util.List;

/**
 * A detector that says what text it can never match, so that {@link RedFlagScan} skips it there: its
 * regex needs one of {@link #gateLiterals()} (lowercase ASCII, matched case-insensitively), or, when
 * {@link #gateOnRuns()}, a run of at least 16 base64-alphabet characters holding a capital or made only
 * of hex digits (what {@code encoded_shell} decodes). A detector that is not {@code Gated} always runs.
 */
interface Gated {

    /** The literals, lowercase, each at least one character; never null. */
    String[] gateLiterals();

    /** Whether this is a custom rule's detector (the fold's cheap prechecks know only the built-ins). */
    default boolean custom() {
        return false;
    }

    /** Whether a long base64 / hex run also opens the gate. */
    default boolean gateOnRuns() {
        return false;
    }

    /**
     * How far around one of its literals a match can reach, in characters: {@code {before, after}}, after
     * counted from the literal's start; the text a {@link RedFlagFold} gives {@link #findAt} at that literal.
     */
    int[] reach(String literal);

    /**
     * As {@link RedFlagDetector#find(CharSequence)} on {@code text}, given where the gate found this
     * detector's literals and runs in it (so the detector reads only the text around them).
     */
    List<String> findAt(CharSequence text, Hits hits);

    /** Where one detector's literals (start, length) and base64 / hex runs (start, end) occur in a batch, in order. */
    final class Hits {
        int[] literals = new int[8];
        int literalCount;
        int[] runs = new int[0];
        int runCount;

        void literal(int at, int length) {
            if (literalCount * 2 + 2 > literals.length) {
                literals = java.util.Arrays.copyOf(literals, literals.length * 2);
            }
            literals[literalCount * 2] = at;
            literals[literalCount * 2 + 1] = length;
            literalCount++;
        }

        void run(int start, int end) {
            if (runCount * 2 + 2 > runs.length) {
                runs = java.util.Arrays.copyOf(runs, Math.max(8, runs.length * 2));
            }
            runs[runCount * 2] = start;
            runs[runCount * 2 + 1] = end;
            runCount++;
        }
    }
}
