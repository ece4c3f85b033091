package dev.sluice.rules.redact;

/**
 * What Sluice does when a detector matches in an inspected request (policy {@code redaction.action}).
 */
public enum RedactionAction {
    /** Replace each secret with {@code [REDACTED:<detector-id>]} and send the rewritten body on. */
    REDACT("redact"),
    /** Refuse the request: 403 with reason {@code credential_detected}; nothing of the secret is sent. */
    BLOCK("block"),
    /** Send the body unchanged; count and audit the findings. */
    REPORT("report");

    private final String label;

    RedactionAction(String label) {
        this.label = label;
    }

    /** Returns the policy word: {@code redact}, {@code block} or {@code report}. */
    public String label() {
        return label;
    }
}
