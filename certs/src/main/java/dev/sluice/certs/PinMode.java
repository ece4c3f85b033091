package dev.sluice.certs;

/** What a pin mismatch does (policy key {@code inspect.<host>.pin_mode}). */
public enum PinMode {
    /** Fail the upstream handshake: the request is answered 502 {@code pin_mismatch}. */
    ENFORCE,
    /** Log and count the mismatch, and let the connection through. */
    REPORT
}
