package dev.sluice.proxy.intercept;

import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.HeaderScanner;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The header values and request-targets of one intercepted downstream connection that the redaction
 * scan found clean, remembered for the detector set they were scanned with, so that the next request
 * on the connection does not scan the same {@code User-Agent}, {@code Accept} or path again. A scan is a
 * function of the value and the detector set alone, so a remembered value needs no second scan; a value
 * with a finding is never remembered (it is scanned, counted and redacted on every request). When the
 * policy's detector set changes (a reload), everything remembered is forgotten.
 *
 * <p>Bounded: at most {@link #MAX_ENTRIES} values of each kind (least recently used dropped first), each
 * at most {@link #MAX_VALUE_CHARS} characters (longer ones are scanned every time). Values of the provider
 * auth headers are never scanned (see {@link HeaderScanner#PROVIDER_AUTH_HEADERS}) and never kept here.
 * Not thread-safe: one per downstream connection, used on its event loop (HTTP/2 streams of one
 * connection share its event loop).
 */
final class CleanValues {

    /** Most values of each kind (header values, request-targets) remembered. */
    static final int MAX_ENTRIES = 64;
    /** Longest value remembered, in characters. */
    static final int MAX_VALUE_CHARS = 4096;

    private DetectorSet detectors;
    private HeaderScanner headerScanner;
    private HeaderScanner targetScanner;
    private final Map<String, Boolean> headerValues = lru();
    private final Map<String, Boolean> targets = lru();

    private static Map<String, Boolean> lru() {
        return new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > MAX_ENTRIES;
            }
        };
    }

    /** Switches to {@code set} (forgetting everything when it is not the set in use) and returns this. */
    CleanValues use(DetectorSet set) {
        if (set != detectors) {
            detectors = set;
            headerScanner = new HeaderScanner(set, HeaderScanner.PROVIDER_AUTH_HEADERS);
            targetScanner = new HeaderScanner(set, Set.of());
            headerValues.clear();
            targets.clear();
        }
        return this;
    }

    /** The header scanner of the set in use (provider auth headers skipped). */
    HeaderScanner headerScanner() {
        return headerScanner;
    }

    /** The request-target scanner of the set in use. */
    HeaderScanner targetScanner() {
        return targetScanner;
    }

    /** Whether {@code value} was found clean as a header value under the set in use. */
    boolean cleanHeaderValue(String value) {
        return headerValues.get(value) != null;
    }

    /** Remembers that {@code value} was found clean as a header value under the set in use. */
    void addCleanHeaderValue(String value) {
        if (value.length() <= MAX_VALUE_CHARS) {
            headerValues.put(value, Boolean.TRUE);
        }
    }

    /** Whether {@code target} was found clean as a request-target under the set in use. */
    boolean cleanTarget(String target) {
        return targets.get(target) != null;
    }

    /** Remembers that {@code target} was found clean as a request-target under the set in use. */
    void addCleanTarget(String target) {
        if (target.length() <= MAX_VALUE_CHARS) {
            targets.put(target, Boolean.TRUE);
        }
    }
}
