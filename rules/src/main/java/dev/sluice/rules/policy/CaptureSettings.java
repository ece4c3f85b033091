package dev.sluice.rules.policy;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The policy's {@code capture} section: which intercepted exchanges are kept for review, and how much
 * of them (docs/policy.md "capture"). Off when the section is absent (then {@link Policy#capture()} is
 * null).
 *
 * @param hosts canonical host patterns (exact, or {@code *.suffix} for subdomains), each covered by an
 *              {@code inspect} entry; non-empty
 * @param sample the share of matching exchanges captured, {@code 0.0..1.0}; see {@link #sampled(String)}
 * @param maxBodyBytes how many bytes of each body (request and response, each) are kept; more is cut
 *                     and marked truncated
 * @param retention captures older than this are removed
 * @param maxTotalBytes the captures directory's cap, in bytes: the oldest captures are removed past it
 */
public record CaptureSettings(List<String> hosts, double sample, long maxBodyBytes, Duration retention,
                              long maxTotalBytes) {

    /** Default {@code max_body_bytes}: 256 KiB. */
    public static final long DEFAULT_MAX_BODY_BYTES = 256L << 10;
    /** Default {@code retention}: 7 days. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** Default {@code max_total_bytes}: 256 MiB. */
    public static final long DEFAULT_MAX_TOTAL_BYTES = 256L << 20;
    /** Default {@code sample}: every matching exchange. */
    public static final double DEFAULT_SAMPLE = 1.0;

    public CaptureSettings {
        hosts = List.copyOf(hosts);
        Objects.requireNonNull(retention, "retention");
        if (!(sample >= 0.0 && sample <= 1.0)) {
            throw new IllegalArgumentException("sample: " + sample + " (expected: 0.0..1.0)");
        }
        if (maxBodyBytes <= 0 || maxTotalBytes <= 0) {
            throw new IllegalArgumentException("maxBodyBytes, maxTotalBytes: " + maxBodyBytes + ", " + maxTotalBytes
                    + " (expected: > 0)");
        }
    }

    /**
     * Answers whether {@code host} (canonical) is under capture: equal to an exact entry, or a subdomain
     * of a {@code *.suffix} entry (the apex is not).
     */
    public boolean covers(String host) {
        for (String pattern : hosts) {
            if (pattern.startsWith("*.") ? host.endsWith(pattern.substring(1)) && host.length() > pattern.length() - 1
                    : pattern.equals(host)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Answers whether the exchange with audit event id {@code eventId} is sampled: the id's first 13 hex
     * digits (52 bits of a random id) read as a fraction {@code u} in {@code [0, 1)}, sampled when
     * {@code u < sample}. Deterministic in the id, so the same id always gives the same answer (and
     * {@code sample: 0} never, {@code sample: 1} always captures); an id that is not hex is sampled when
     * {@code sample} is 1.
     */
    public boolean sampled(String eventId) {
        if (sample >= 1.0) {
            return true;
        }
        if (sample <= 0.0 || eventId == null || eventId.length() < 13) {
            return false;
        }
        long bits;
        try {
            bits = Long.parseLong(eventId.substring(0, 13), 16);
        } catch (NumberFormatException e) {
            return false;
        }
        return bits / (double) (1L << 52) < sample;
    }
}
