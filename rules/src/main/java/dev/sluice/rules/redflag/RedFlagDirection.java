package dev.sluice.rules.redflag;

/** Which bodies a red-flag rule reads ({@code red_flags.direction}). */
public enum RedFlagDirection {
    REQUEST, RESPONSE, BOTH;

    /** Answers whether the rule reads request bodies. */
    public boolean request() {
        return this != RESPONSE;
    }

    /** Answers whether the rule reads response bodies. */
    public boolean response() {
        return this != REQUEST;
    }
}
