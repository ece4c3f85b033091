package dev.sluice.certs;

import java.util.List;
import java.util.Objects;

/**
 * How one host's upstream chain is pinned (policy keys {@code inspect.<host>.pins} and
 * {@code pin_mode}).
 *
 * @param kind none, an explicit list, or trust on first use
 * @param pins the explicit pins ({@link SpkiPin} format); empty unless {@code kind} is {@link Kind#EXPLICIT}
 * @param mode what a mismatch does
 */
public record PinPolicy(Kind kind, List<String> pins, PinMode mode) {

    /** The three kinds of pinning. */
    public enum Kind {
        /** No pins: PKIX validation and hostname verification only. */
        NONE,
        /** {@code pins: ["sha256/...", ...]}: pinned when any SPKI of the validated chain is listed. */
        EXPLICIT,
        /**
         * {@code pins: tofu}: the first validated chain's intermediate and anchor SPKIs are recorded in the
         * {@link PinStore}; later chains are checked against them.
         */
        TOFU
    }

    private static final PinPolicy NONE = new PinPolicy(Kind.NONE, List.of(), PinMode.ENFORCE);

    /**
     * Checks the arguments: explicit pins must be a non-empty list of well-formed pins, other kinds none.
     *
     * @throws IllegalArgumentException for a malformed pin or a list that does not fit the kind
     */
    public PinPolicy {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(mode, "mode");
        pins = List.copyOf(Objects.requireNonNull(pins, "pins"));
        if (kind == Kind.EXPLICIT && pins.isEmpty()) {
            throw new IllegalArgumentException("pins: empty (expected: at least one sha256/ pin)");
        }
        if (kind != Kind.EXPLICIT && !pins.isEmpty()) {
            throw new IllegalArgumentException("pins: " + pins.size() + " given for kind " + kind
                    + " (expected: none)");
        }
        pins.forEach(SpkiPin::parse);
    }

    /** Returns the policy of a host without pins. */
    public static PinPolicy none() {
        return NONE;
    }

    /** Returns a policy with explicit pins. */
    public static PinPolicy explicit(List<String> pins, PinMode mode) {
        return new PinPolicy(Kind.EXPLICIT, pins, mode);
    }

    /** Returns a trust-on-first-use policy. */
    public static PinPolicy tofu(PinMode mode) {
        return new PinPolicy(Kind.TOFU, List.of(), mode);
    }
}
