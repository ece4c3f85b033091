package dev.sluice.rules.redflag;

/**
 * A detector that says what text it can never match, so that {@link RedFlagScan} skips it there: its
 * regex needs one of {@link #gateLiterals()} (lowercase ASCII, matched case-insensitively), or, when
 * {@link #gateOnRuns()}, a run of at least 16 base64-alphabet characters holding a capital or made only
 * of hex digits (what {@code encoded_shell} decodes). A detector that is not {@code Gated} always runs.
 */
interface Gated {

    /** The literals, lowercase, each at least one character; never null. */
    String[] gateLiterals();

    /** Whether a long base64 / hex run also opens the gate. */
    default boolean gateOnRuns() {
        return false;
    }
}
