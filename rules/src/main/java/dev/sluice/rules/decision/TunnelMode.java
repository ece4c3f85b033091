package dev.sluice.rules.decision;

/**
 * What an allowed tunnel becomes (a CONNECT on the explicit listener, a TLS connection on the transparent
 * listener): part of its {@link Decision}, so that no handler decides it on its own.
 *
 * <p>A handler that cannot carry out {@link #INTERCEPT} (no interception material, a client that
 * half-closed before its TLS handshake, anything) refuses the tunnel with
 * {@link Reason#INTERCEPTION_UNAVAILABLE}; it never relays an inspected host blind (fail closed).
 */
public enum TunnelMode {
    /** Bytes are relayed as they are: the host is not under {@code inspect}. */
    BLIND("tunnel"),
    /** TLS is terminated with a leaf from the local CA and every request inside is decided on its own. */
    INTERCEPT("intercept");

    private final String tlsMode;

    TunnelMode(String tlsMode) {
        this.tlsMode = tlsMode;
    }

    /** Returns the audit record's {@code tls.mode} value for such a tunnel: {@code tunnel} or {@code intercept}. */
    public String tlsMode() {
        return tlsMode;
    }
}
