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
    /** The tap keywords ({@link #withTap}), empty for none. */
    private final List<TapKeyword> tap;
    /** Per keyword of the prefilter: the index into {@link #tap} of the tap keyword it is, or -1. */
    final int[] tapOf;
    /** The last set {@link #withTap} built from this one, and its tap (a policy asks for one). */
    private volatile DetectorSet lastTapped;

    private DetectorSet(List<Detector> detectors) {
        this(detectors, List.of());
    }

    private DetectorSet(List<Detector> detectors, List<TapKeyword> tap) {
        this.detectors = List.copyOf(detectors);
        this.tap = List.copyOf(tap);
        // the tap keywords go into the same keyword scan: those that are a detector's keyword are that
        // keyword, the others extra keywords before the escape triggers (which stay last)
        Set<String> own = new HashSet<>();
        for (Detector d : this.detectors) {
            own.addAll(d.keywords());
        }
        List<String> extra = new ArrayList<>();
        for (TapKeyword t : this.tap) {
            if (!own.contains(t.keyword()) && !extra.contains(t.keyword())) {
                extra.add(t.keyword());
            }
        }
        extra.addAll(StreamingRedactor.JSON_ESCAPE_TRIGGERS);
        this.prefilter = KeywordPrefilter.of(this.detectors, extra);
        this.tapOf = new int[prefilter.keywords().size()];
        java.util.Arrays.fill(tapOf, -1);
        for (int t = 0; t < this.tap.size(); t++) {
            int k = prefilter.keywords().indexOf(this.tap.get(t).keyword());
            if (tapOf[k] >= 0) {
                throw new IllegalArgumentException("tap keyword " + this.tap.get(t).keyword() + " listed twice");
            }
            tapOf[k] = t;
        }
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

    /**
     * Returns this set with {@code tap} added to its keyword scan: a redactor started with a
     * {@link KeywordTap} ({@link #newRedactor(BodyFormat, RedactionAction, long, KeywordTap)}) reports
     * them, in JSON bodies, with the decoded string around each; detection and redaction are unchanged.
     * The last set built is kept (one per policy), so calling this per request is cheap.
     *
     * @param tap distinct keywords; empty gives this set
     */
    public DetectorSet withTap(List<TapKeyword> tap) {
        if (tap.isEmpty()) {
            return this;
        }
        DetectorSet last = lastTapped;
        if (last != null && last.tap.equals(tap)) {
            return last;
        }
        DetectorSet built = new DetectorSet(detectors, tap);
        lastTapped = built;
        return built;
    }

    /** Returns the tap keywords of this set ({@link #withTap}), empty for none. */
    public List<TapKeyword> tap() {
        return tap;
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

    /**
     * As {@link #newRedactor(BodyFormat, RedactionAction, long)}, reporting this set's {@link #tap()}
     * keywords to {@code tap} (in {@link BodyFormat#JSON} bodies; a plain-text body reports none).
     */
    public StreamingRedactor newRedactor(BodyFormat format, RedactionAction action, long maxBodyBytes,
                                         @org.jspecify.annotations.Nullable KeywordTap tap) {
        return new StreamingRedactor(this, format, action, maxBodyBytes, 0, tap);
    }

    @Override
    public String toString() {
        return "DetectorSet[" + detectors.size() + " detectors, " + prefilter + "]";
    }
}
