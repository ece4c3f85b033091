package dev.sluice.rules.redact;

/**
 * A body (after content decoding) is larger than the inspection limit; the proxy answers 413
 * {@code body_too_large} and never passes the body on unscanned.
 */
public final class BodyTooLargeException extends Exception {
    private static final long serialVersionUID = 1L;

    private final long limitBytes;

    public BodyTooLargeException(long limitBytes) {
        super("body: more than " + limitBytes + " bytes (expected: at most limits.max_inspected_body)");
        this.limitBytes = limitBytes;
    }

    /** Returns the limit that was exceeded, in bytes. */
    public long limitBytes() {
        return limitBytes;
    }
}
