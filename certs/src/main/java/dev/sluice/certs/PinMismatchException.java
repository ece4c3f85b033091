package dev.sluice.certs;

import java.security.cert.CertificateException;
import java.util.List;
import java.util.Optional;

/**
 * The upstream chain passed PKIX validation and hostname verification, but none of its SPKIs matches
 * the host's pins, and the host's pin mode is enforce. Thrown from the trust manager, it fails the
 * handshake; the JDK wraps it in an {@link javax.net.ssl.SSLHandshakeException}, so use
 * {@link #find(Throwable)} to tell it from other TLS failures (reason {@code pin_mismatch}, not
 * {@code upstream_tls_failed}).
 */
public final class PinMismatchException extends CertificateException {

    private final transient PinCheck check;

    /** Creates the exception for a {@link PinResult#MISMATCH} check. */
    public PinMismatchException(PinCheck check) {
        super("pin_mismatch: " + check.host() + ": chain SPKIs " + check.chainPins()
                + " match none of the pins " + check.expectedPins());
        this.check = check;
    }

    /** Returns the upstream host. */
    public String host() {
        return check.host();
    }

    /** Returns the SPKI pins of the validated chain, leaf first, trust anchor last. */
    public List<String> chainPins() {
        return check.chainPins();
    }

    /** Returns the pins that were expected. */
    public List<String> expectedPins() {
        return check.expectedPins();
    }

    /** Returns the whole check. */
    public PinCheck check() {
        return check;
    }

    /** Returns the first {@code PinMismatchException} in {@code failure}'s cause chain, if any. */
    public static Optional<PinMismatchException> find(Throwable failure) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < 32; depth++, t = t.getCause()) {
            if (t instanceof PinMismatchException) {
                return Optional.of((PinMismatchException) t);
            }
        }
        return Optional.empty();
    }
}
