package dev.sluice.certs;

import java.util.List;
import java.util.Objects;

/**
 * What pin checking concluded for one upstream handshake. Holds no secrets: SPKI pins are digests of
 * public keys.
 *
 * @param host the canonical upstream host
 * @param result the outcome
 * @param mode the host's pin mode ({@link PinMode#ENFORCE} for hosts without pins)
 * @param chainPins the SPKI pins of the validated chain, leaf first, trust anchor last
 * @param expectedPins the pins in force for the host (explicit or recorded); empty for {@link PinResult#NONE}
 */
public record PinCheck(String host, PinResult result, PinMode mode, List<String> chainPins,
        List<String> expectedPins) {

    /** Checks the arguments and copies the lists. */
    public PinCheck {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(result, "result");
        Objects.requireNonNull(mode, "mode");
        chainPins = List.copyOf(chainPins);
        expectedPins = List.copyOf(expectedPins);
    }

    /** Returns whether this outcome fails the handshake: a mismatch in enforce mode. */
    public boolean rejects() {
        return result == PinResult.MISMATCH && mode == PinMode.ENFORCE;
    }
}
