package dev.sluice.rules.decision;

/** The outcome of a decision; {@link #label()} is the audit record's {@code decision} field. */
public enum Verdict {
    ALLOW("allow"),
    DENY("deny"),
    /** Report mode: the policy would deny, the request is let through and logged. */
    WOULD_DENY("would_deny");

    private final String label;

    Verdict(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
