package dev.sluice.certs;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * Pins recorded on first use for one host.
 *
 * @param host canonical host
 * @param pins SPKI pins ({@link SpkiPin} format) of the intermediates and the trust anchor of the first
 *     validated chain, never empty
 * @param recordedAt when they were recorded (millisecond precision)
 */
public record PinRecord(String host, List<String> pins, Instant recordedAt) {

    /** Checks the arguments and copies the list. */
    public PinRecord {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(recordedAt, "recordedAt");
        pins = List.copyOf(Objects.requireNonNull(pins, "pins"));
        if (pins.isEmpty()) {
            throw new IllegalArgumentException("pins: empty (expected: at least one SPKI pin)");
        }
        pins.forEach(SpkiPin::parse);
    }
}
