package dev.sluice.proxy.exchange;

/**
 * Thrown by a {@link RequestFront} that requires absolute-form (the explicit proxy, RFC 9112 section 3.2.2)
 * when a request comes in origin-form or asterisk-form: answered 400 {@code malformed_request}. The
 * message is short and safe for the audit record.
 */
public final class OriginFormException extends Exception {
    private static final long serialVersionUID = 1L;

    public OriginFormException(String message) {
        super(message, null, false, false);
    }
}
