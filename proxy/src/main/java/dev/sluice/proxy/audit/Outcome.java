package dev.sluice.proxy.audit;

/**
 * How an exchange ended when that is not what its {@code decision} says; {@link #label()} is the audit
 * record's {@code outcome}, absent when the exchange went as decided (an allowed exchange relayed, a
 * denied one refused).
 */
public enum Outcome {
    /**
     * The policy let the exchange through and the network or the origin failed it (502/504: a reason for
     * which {@link dev.sluice.rules.decision.Reason#upstreamFailure()} is true). The record's
     * {@code decision} stays what the policy decided; {@code reason} and {@code rule} name the failure.
     */
    UPSTREAM_FAILURE("upstream_failure");

    private final String label;

    Outcome(String label) {
        this.label = label;
    }

    /** Returns the snake_case word of audit records: {@code upstream_failure}. */
    public String label() {
        return label;
    }
}
