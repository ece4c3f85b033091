package dev.sluice.certs;

import java.io.IOException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Validates an upstream server chain and checks the host's SPKI pins: {@link UpstreamTrust} first
 * (PKIX, hostname), then the host's {@link PinPolicy}:
 * <ul>
 *   <li>{@link PinPolicy.Kind#NONE}: {@link PinResult#NONE};</li>
 *   <li>{@link PinPolicy.Kind#EXPLICIT}: {@link PinResult#OK} when any SPKI of the validated path,
 *       trust anchor included, is one of the pins, else {@link PinResult#MISMATCH};</li>
 *   <li>{@link PinPolicy.Kind#TOFU}: with no record, the path's intermediate and anchor SPKIs are
 *       recorded ({@link PinResult#RECORDED}; when another connection recorded first, its pins are
 *       checked instead); with a record, as explicit pins.</li>
 * </ul>
 * Pins are checked only after validation succeeds: a pin never makes an invalid chain acceptable.
 * A pin store that cannot be read or written fails the check (fail closed), in either mode.
 *
 * <p>Thread-safe. Blocking: validation is CPU work and TOFU hosts read a small file (see
 * {@link PinStore}); run it where blocking is allowed (Netty: a delegated-task executor for the
 * SslHandler).
 */
public final class PinVerifier {

    private final UpstreamTrust trust;
    private final Function<String, PinPolicy> policies;
    private final PinStore store;

    /**
     * Creates a verifier.
     *
     * @param policies the pin policy of a canonical host; must return {@link PinPolicy#none()}, never
     *     {@code null}, for hosts without pins. Read per check, so a policy reload applies to the next
     *     handshake.
     * @param store where trust-on-first-use pins live
     */
    public PinVerifier(UpstreamTrust trust, Function<String, PinPolicy> policies, PinStore store) {
        this.trust = Objects.requireNonNull(trust, "trust");
        this.policies = Objects.requireNonNull(policies, "policies");
        this.store = Objects.requireNonNull(store, "store");
    }

    /**
     * Validates {@code chain} for {@code host} and checks pins, without throwing for a pin mismatch.
     *
     * @param authType as {@link UpstreamTrust#validate}; {@code null} for "UNKNOWN"
     * @return the outcome; {@link PinCheck#rejects()} tells whether enforcement must fail the connection
     * @throws CertificateException if validation or hostname verification fails, or the pin store fails
     */
    public PinCheck evaluate(String host, X509Certificate[] chain, String authType) throws CertificateException {
        ValidatedChain validated = trust.validate(host, chain, authType);
        PinPolicy policy = Objects.requireNonNull(policies.apply(host), "policy of " + host);
        List<String> chainPins = validated.spkiPins();
        switch (policy.kind()) {
            case NONE:
                return new PinCheck(host, PinResult.NONE, policy.mode(), chainPins, List.of());
            case EXPLICIT:
                return compare(host, policy.mode(), chainPins, policy.pins());
            case TOFU:
                return tofu(host, policy.mode(), validated, chainPins);
            default:
                throw new IllegalStateException("unknown pin policy kind " + policy.kind());
        }
    }

    /**
     * Validates {@code chain} for {@code host} and checks pins, throwing on a mismatch in enforce mode.
     *
     * @return the outcome: never a rejecting one
     * @throws PinMismatchException on a mismatch in enforce mode
     * @throws CertificateException if validation or hostname verification fails, or the pin store fails
     */
    public PinCheck check(String host, X509Certificate[] chain, String authType) throws CertificateException {
        PinCheck c = evaluate(host, chain, authType);
        if (c.rejects()) {
            throw new PinMismatchException(c);
        }
        return c;
    }

    /** As {@link #check(String, X509Certificate[], String)} with authType "UNKNOWN". */
    public PinCheck check(String host, X509Certificate[] chain) throws CertificateException {
        return check(host, chain, null);
    }

    private PinCheck tofu(String host, PinMode mode, ValidatedChain validated, List<String> chainPins)
            throws CertificateException {
        try {
            Optional<List<String>> recorded = store.pinsFor(host);
            if (recorded.isPresent()) {
                return compare(host, mode, chainPins, recorded.get());
            }
            List<String> mine = validated.issuerPins();
            List<String> inForce = store.recordIfAbsent(host, mine);
            if (inForce.equals(mine)) {
                return new PinCheck(host, PinResult.RECORDED, mode, chainPins, inForce);
            }
            return compare(host, mode, chainPins, inForce);
        } catch (IOException e) {
            throw new CertificateException("pin store: " + e.getMessage(), e);
        }
    }

    private static PinCheck compare(String host, PinMode mode, List<String> chainPins, List<String> expected) {
        for (String p : chainPins) {
            if (expected.contains(p)) {
                return new PinCheck(host, PinResult.OK, mode, chainPins, expected);
            }
        }
        return new PinCheck(host, PinResult.MISMATCH, mode, chainPins, expected);
    }
}
