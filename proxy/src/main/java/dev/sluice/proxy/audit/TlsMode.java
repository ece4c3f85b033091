package dev.sluice.proxy.audit;

/** What Sluice saw of TLS on a connection; {@link #label()} is the audit record's {@code tls.mode}. */
public enum TlsMode {
    /** Plain HTTP: no TLS between the client and Sluice. */
    NONE("none"),
    /** A blind tunnel: TLS passes through unread. */
    TUNNEL("tunnel"),
    /** An intercepted tunnel: Sluice terminates the client's TLS and opens its own upstream. */
    INTERCEPT("intercept");

    private final String label;

    TlsMode(String label) {
        this.label = label;
    }

    /** Returns the lowercase word of audit records: {@code none}, {@code tunnel} or {@code intercept}. */
    public String label() {
        return label;
    }
}
