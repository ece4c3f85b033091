package dev.sluice.proxy.audit;

/** The listener a connection arrived on; {@link #label()} is the audit record's {@code listener} and the metrics label. */
public enum Listener {
    /** The explicit proxy listener (HTTP proxy protocol, CONNECT). */
    EXPLICIT("explicit"),
    /** The transparent listener and its DNS responder (sandboxes whose traffic is redirected). */
    TRANSPARENT("transparent");

    private final String label;

    Listener(String label) {
        this.label = label;
    }

    /** Returns the lowercase word of audit records and metrics: {@code explicit} or {@code transparent}. */
    public String label() {
        return label;
    }
}
