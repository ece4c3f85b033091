package dev.sluice.rules.redact;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The detectors in force (built-in and custom) with their compiled {@link KeywordPrefilter}. Immutable
 * and thread-safe: build one per policy and start one {@link StreamingRedactor} per message from it.
 */
public final class DetectorSet {

    /**
     * Characters of text kept before a region for look-behind assertions: patterns may look back this
     * far before where their match can start (url-password's scheme check needs 21).
     */
    static final int CONTEXT_BYTES = 32;

    private final List<Detector> detectors;
    private final KeywordPrefilter prefilter;
    private final int maxLength;
    private final int holdback;
    /** Per detector: its precheck or null, and whether its keywords count only at a word start. */
    final Precheck[] prechecks;
    final boolean[] wordStartOnly;
    /** Per keyword of the prefilter: all its detectors need a word start; one of them has a precheck. */
    final boolean[] keywordWordStartOnly;
    final boolean[] keywordPrechecked;

    private DetectorSet(List<Detector> detectors) {
        this.detectors = List.copyOf(detectors);
        this.prefilter = KeywordPrefilter.of(this.detectors, StreamingRedactor.JSON_ESCAPE_TRIGGERS);
        int maxLen = 0;
        int maxBefore = 0;
        for (Detector d : this.detectors) {
            maxLen = Math.max(maxLen, d.maxLength());
            if (!EncodedDetectors.looksBackInRun(d)) {
                maxBefore = Math.max(maxBefore, d.maxCharsBeforeKeyword());
            }
        }
        this.maxLength = maxLen;
        this.holdback = prefilter.maxKeywordLength() + maxBefore + CONTEXT_BYTES;
        int n = this.detectors.size();
        this.prechecks = new Precheck[n];
        this.wordStartOnly = new boolean[n];
        for (int d = 0; d < n; d++) {
            prechecks[d] = this.detectors.get(d).precheck();
            wordStartOnly[d] = this.detectors.get(d).keywordAtWordStart();
        }
        int keywords = prefilter.keywords().size();
        this.keywordWordStartOnly = new boolean[keywords];
        this.keywordPrechecked = new boolean[keywords];
        for (int k = 0; k < keywords; k++) {
            int[] ds = prefilter.detectorsOf(k);
            boolean all = ds.length > 0;
            for (int d : ds) {
                all &= wordStartOnly[d];
                keywordPrechecked[k] |= prechecks[d] != null;
            }
            keywordWordStartOnly[k] = all;
        }
    }

    /**
     * Builds a set; ids must be distinct. Earlier detectors name a redaction when matches overlap.
     *
     * @throws IllegalArgumentException on an empty list or a repeated id
     */
    public static DetectorSet of(List<Detector> detectors) {
        Objects.requireNonNull(detectors, "detectors");
        Set<String> ids = new HashSet<>();
        for (Detector d : detectors) {
            if (!ids.add(d.id())) {
                throw new IllegalArgumentException("detectors: id " + d.id() + " listed twice");
            }
        }
        return new DetectorSet(new ArrayList<>(detectors));
    }

    /** Returns a set of every built-in detector. */
    public static DetectorSet builtins() {
        return of(BuiltinDetectors.all());
    }

    /** Returns the detectors, in priority order. */
    public List<Detector> detectors() {
        return detectors;
    }

    /**
     * Returns the keyword scan: the detectors' keywords, then {@link StreamingRedactor#JSON_ESCAPE_TRIGGERS}
     * (which belong to no detector).
     */
    public KeywordPrefilter prefilter() {
        return prefilter;
    }

    /** Returns the longest match any detector can produce, in bytes: the bound of the carry-over window. */
    public int maxMatchLength() {
        return maxLength;
    }

    /**
     * Returns how many bytes at the end of plain-text input a redactor holds back when no keyword is
     * pending: the longest keyword plus the furthest a match may start before its keyword plus a small
     * look-behind context. (JSON input holds back more: see {@link StreamingRedactor}.)
     */
    public int holdbackBytes() {
        return holdback;
    }

    /**
     * Starts a redactor for one message body.
     *
     * @param format how to read the body
     * @param action what to do with matches
     * @param maxBodyBytes the largest body accepted, in bytes (policy {@code limits.max_inspected_body});
     *                     beyond it {@link StreamingRedactor#feed} throws {@link BodyTooLargeException}
     */
    public StreamingRedactor newRedactor(BodyFormat format, RedactionAction action, long maxBodyBytes) {
        return new StreamingRedactor(this, format, action, maxBodyBytes);
    }

    @Override
    public String toString() {
        return "DetectorSet[" + detectors.size() + " detectors, " + prefilter + "]";
    }
}
