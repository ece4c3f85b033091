package dev.sluice.proxy.exchange;

/**
 * Thrown by a {@link RequestFront} when a request names another origin than the connection it came on
 * (RFC 9110 section 15.5.20): answered 421 {@code host_mismatch}. The message is short and safe for the
 * audit record.
 */
public final class MisdirectedRequestException extends Exception {
    private static final long serialVersionUID = 1L;

    public MisdirectedRequestException(String message) {
        super(message, null, false, false);
    }
}
