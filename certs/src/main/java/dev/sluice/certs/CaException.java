package dev.sluice.certs;

/**
 * The local CA cannot be created or loaded: files missing, unreadable, malformed, not matching each
 * other, expired, or unsafe. The message names the file and what to do; Sluice refuses to start on it.
 */
public class CaException extends Exception {

    /** Creates an exception with a message naming the file and the defect. */
    public CaException(String message) {
        super(message);
    }

    /** Creates an exception with a message naming the file and the defect, and its cause. */
    public CaException(String message, Throwable cause) {
        super(message, cause);
    }
}
