package dev.sluice.rules.redact;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    /**
     * The sets {@link #withTap} built from this one, by tap, least recently used first; at most
     * {@link #MAX_TAPPED} (a policy asks for one or two: the request rules' tap, the response rules').
     */
    private final Map<List<TapKeyword>, DetectorSet> tapped = new LinkedHashMap<>(4, 0.75f, true);
    /** Most tapped sets kept per set. */
    static final int MAX_TAPPED = 4;

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
        Set<String> tapped = new HashSet<>();
        for (TapKeyword t : this.tap) {
            tapped.add(t.keyword());
        }
        this.prefilter = KeywordPrefilter.of(this.detectors, extra, tapped);
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

    /** Most compiled sets {@link #compiled} keeps. */
    static final int MAX_COMPILED = 8;

    /** Sets built by {@link #compiled}, by the content of their detectors, least recently used first. */
    private static final Map<List<DetectorKey>, DetectorSet> COMPILED = new LinkedHashMap<>(16, 0.75f, true);

    /**
     * What makes two detectors scan alike: every component, the pattern by its source and flags (a
     * {@link java.util.regex.Pattern} has no value equality), the validator and precheck by identity
     * (the built-ins' are constants; a policy's custom detector has neither).
     */
    private record DetectorKey(String id, String description, List<String> keywords, String pattern, int flags,
                               int secretGroup, double minEntropy, @org.jspecify.annotations.Nullable Object validator,
                               int maxCharsBeforeKeyword, int maxLength, boolean keywordAtWordStart,
                               @org.jspecify.annotations.Nullable Object precheck) {

        static DetectorKey of(Detector d) {
            return new DetectorKey(d.id(), d.description(), d.keywords(), d.pattern().pattern(), d.pattern().flags(),
                    d.secretGroup(), d.minEntropy(), d.validator(), d.maxCharsBeforeKeyword(), d.maxLength(),
                    d.keywordAtWordStart(), d.precheck());
        }
    }

    /**
     * As {@link #of}, but returns the set already built for detectors that scan alike (same ids,
     * patterns, keywords and limits, in the same order), if one of the last {@value #MAX_COMPILED} is.
     * Compiling a set (its keyword scan) takes a few hundred milliseconds for the built-in detectors, so
     * a policy reload that leaves {@code redaction} as it was reuses the set, and with it the sets
     * {@link #withTap} built from it. A set is immutable, so sharing it between policies changes nothing
     * a redactor does. Thread-safe; two threads compiling the same detectors at once may both build, and
     * one of the results is kept.
     *
     * @throws IllegalArgumentException as {@link #of}
     */
    public static DetectorSet compiled(List<Detector> detectors) {
        Objects.requireNonNull(detectors, "detectors");
        List<DetectorKey> key = detectors.stream().map(DetectorKey::of).toList();
        return cached(COMPILED, MAX_COMPILED, key, () -> of(detectors));
    }

    /**
     * Returns this set with {@code tap} added to its keyword scan: a redactor started with a
     * {@link KeywordTap} ({@link #newRedactor(BodyFormat, RedactionAction, long, KeywordTap)}) reports
     * them with the decoded text around each; detection and redaction are unchanged.
     * The sets built are kept (the {@value #MAX_TAPPED} most recently used taps), so calling this per request
     * is cheap once a set has been built for its tap. Building one compiles a keyword scan (a few hundred
     * milliseconds for the built-in detectors), so the policy loader asks for its tap when it compiles a
     * policy, off the event loop ({@code PolicyLoader}); a request that asks first builds it on its own
     * thread.
     *
     * @param tap distinct keywords; empty gives this set
     */
    public DetectorSet withTap(List<TapKeyword> tap) {
        if (tap.isEmpty()) {
            return this;
        }
        List<TapKeyword> key = List.copyOf(tap);
        return cached(tapped, MAX_TAPPED, key, () -> new DetectorSet(detectors, key));
    }

    /**
     * The set {@code lru} (access-ordered) holds for {@code key}, else the one {@code build} makes, kept
     * with at most {@code max} entries (the least recently used dropped). Built outside the lock, so a
     * slow build blocks no reader; of two threads building the same key at once, the first one kept wins.
     */
    private static <K> DetectorSet cached(Map<K, DetectorSet> lru, int max, K key,
                                          java.util.function.Supplier<DetectorSet> build) {
        synchronized (lru) {
            DetectorSet known = lru.get(key);
            if (known != null) {
                return known;
            }
        }
        DetectorSet built = build.get();
        synchronized (lru) {
            DetectorSet raced = lru.putIfAbsent(key, built);
            if (raced != null) {
                return raced;
            }
            if (lru.size() > max) {
                lru.remove(lru.keySet().iterator().next());
            }
        }
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
     * keywords to {@code tap}: in a {@link BodyFormat#JSON} body with the decoded JSON string around each
     * hit, in a {@link BodyFormat#PLAIN} one (a response's decoded text) with the text around it.
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
