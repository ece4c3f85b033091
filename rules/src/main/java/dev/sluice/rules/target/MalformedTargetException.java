package dev.sluice.rules.target;

/**
 * Thrown when a request-target or host cannot be put into canonical form (answered 400,
 * reason {@code malformed_target}). The message is short, safe to put on the wire and in the audit
 * record, and never contains credentials (userinfo is never echoed).
 */
public final class MalformedTargetException extends Exception {
    private static final long serialVersionUID = 1L;

    public MalformedTargetException(String message) {
        super(message, null, false, false);
    }
}
