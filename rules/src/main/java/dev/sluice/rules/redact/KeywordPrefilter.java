package dev.sluice.rules.redact;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Finds every occurrence of the detectors' keywords in text, with ASCII case folding (A–Z read as a–z),
 * in one pass and without lowercasing the text first (the <em>run keywords</em> only inside runs of
 * base64 characters, see {@link #scan}). Only detectors with a keyword in a window run their pattern
 * there.
 *
 * <p>Why run keywords: the vector scan's cost grows with the keywords it verifies at fingerprint matches
 * (16 buckets; every new four-byte fingerprint widens one). The base64 stems of the base64 decoders and
 * the vendor prefixes that only occur inside long token runs ({@link LongRunKeywords}: {@code ghp_},
 * {@code sk-ant-}, {@code glpat-}, Twilio's {@code SK}, …) — together 154 of the built-ins' 243
 * keywords — are looked for only inside runs of at least {@value #RUN} run characters, which a vector
 * pass finds (about 600 flagged steps per MiB of the benchmark prompt); the other keywords (labels such as
 * {@code token}, {@code password}, short prefixes, JSON escape triggers) stay in the buckets. A keyword
 * is a run keyword only when every detector that has it needs such a run, and never when a
 * {@link KeywordTap} listens for it.
 *
 * <p>Two implementations give the same answers:
 * <ul>
 *   <li>the vector scan ({@link TeddyScan}, the Teddy algorithm: 32 positions per step with byte
 *       shuffles, then exact verification of each candidate), used when the JVM runs with
 *       {@code --add-modules jdk.incubator.vector} on a CPU with 256-bit vectors — the {@code ./sluice}
 *       launcher, the tests and the benchmarks pass that option; and</li>
 *   <li>the scalar scan: an Aho–Corasick automaton compiled to a byte-indexed DFA. One {@code int} per
 *       (state, byte): {@code nextState * 256}, with the sign bit set when {@code nextState} ends one or
 *       more keywords; upper-case columns repeat the lower-case ones. The inner loop is one table load and
 *       one sign test per byte, and inputs of 4 KiB or more are scanned in four interleaved lanes, so four
 *       independent load chains overlap (about 3 times as fast as one lane).</li>
 * </ul>
 * {@link #vectorized()} says which one runs; the system property {@code sluice.redact.scalar=true}
 * forces the scalar scan. Immutable and thread-safe; a scan needs no state from earlier calls.
 *
 * <p>References: A. V. Aho, M. J. Corasick, "Efficient string matching: an aid to bibliographic search",
 * CACM 18(6), 1975; Teddy, see {@link TeddyScan}.
 */
public final class KeywordPrefilter {

    /** The automaton's start state. */
    private static final int START_STATE = 0;

    /** Whether {@link TeddyScan} can run in this JVM (module present, 256-bit vectors, not disabled). */
    private static final boolean VECTOR_AVAILABLE = vectorAvailable();

    /** Receives keyword occurrences from {@link #scan}. */
    @FunctionalInterface
    public interface HitSink {
        /**
         * Called once per occurrence.
         *
         * @param keyword index into {@link #keywords()}
         * @param endExclusive index in the scanned array just after the keyword's last byte
         */
        void hit(int keyword, int endExclusive);
    }

    /**
     * Run characters around a run keyword (see {@link #scan}) needed for it to count: base64 and
     * base64url characters, {@code [A-Za-z0-9+/_-]}.
     */
    static final int RUN = 24;

    private final List<String> keywords;
    private final int[][] keywordDetectors;
    private final int[] keywordLength;
    private final int[] table;
    private final int[][] outputs;
    private final int detectorCount;
    private final int maxKeywordLength;
    /** Per keyword: it counts only inside a run (see {@link #scan}); and whether any keyword does. */
    private final boolean[] inRun;
    private final boolean anyInRun;
    /** The automaton of the run keywords alone (states as in {@link #table}), for runs the vector scan flags. */
    private final int[] runTable;
    private final int[][] runOutputs;
    /** The vector scan, or null for the scalar one. */
    private final TeddyScan teddy;

    private KeywordPrefilter(List<String> keywords, int[][] keywordDetectors, boolean[] inRun, int detectorCount,
                             boolean vector) {
        this.keywords = List.copyOf(keywords);
        this.keywordDetectors = keywordDetectors;
        this.keywordLength = keywords.stream().mapToInt(String::length).toArray();
        Automaton all = Automaton.of(keywords, k -> true);
        this.table = all.table;
        this.outputs = all.outputs;
        this.inRun = inRun;
        boolean any = false;
        for (boolean r : inRun) {
            any |= r;
        }
        this.anyInRun = any;
        Automaton runs = Automaton.of(keywords, k -> inRun[k]);
        this.runTable = runs.table;
        this.runOutputs = runs.outputs;
        this.detectorCount = detectorCount;
        this.maxKeywordLength = Arrays.stream(keywordLength).max().orElse(0);
        this.teddy = vector && !keywords.isEmpty()
                ? new TeddyScan(keywords.stream().map(k -> k.getBytes(StandardCharsets.US_ASCII)).toList(), inRun)
                : null;
    }

    private static boolean vectorAvailable() {
        if (Boolean.getBoolean("sluice.redact.scalar")
                || ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
            return false;
        }
        try {
            return TeddyScan.supported();
        } catch (LinkageError e) {
            return false;
        }
    }

    /**
     * Builds the automaton for {@code detectors}' keywords; detector {@code i} of the list is reported as
     * index {@code i}. An empty list gives an automaton that never reports anything.
     */
    public static KeywordPrefilter of(List<Detector> detectors) {
        return of(detectors, VECTOR_AVAILABLE);
    }

    /**
     * As {@link #of(List)}, choosing the implementation: {@code vector} true asks for the vector scan,
     * which is used only if it can run in this JVM; false forces the scalar scan (for tests comparing
     * the two).
     */
    static KeywordPrefilter of(List<Detector> detectors, boolean vector) {
        return of(detectors, List.of(), Set.of(), vector);
    }

    /**
     * As {@link #of(List)}, with {@code extraKeywords} (lowercase ASCII, at least two bytes, distinct from
     * the detectors' keywords) reported after the detectors' keywords, for no detector.
     */
    static KeywordPrefilter of(List<Detector> detectors, List<String> extraKeywords) {
        return of(detectors, extraKeywords, Set.of(), VECTOR_AVAILABLE);
    }

    /**
     * As {@link #of(List, List)}, with {@code reportedEverywhere}: keywords reported wherever they occur,
     * never only inside runs (the {@link KeywordTap} keywords, which a detector may share).
     */
    static KeywordPrefilter of(List<Detector> detectors, List<String> extraKeywords, Set<String> reportedEverywhere) {
        return of(detectors, extraKeywords, reportedEverywhere, VECTOR_AVAILABLE);
    }

    private static KeywordPrefilter of(List<Detector> detectors, List<String> extraKeywords,
                                       Set<String> reportedEverywhere, boolean vector) {
        Objects.requireNonNull(detectors, "detectors");
        Map<String, List<Integer>> byKeyword = new LinkedHashMap<>();
        for (int d = 0; d < detectors.size(); d++) {
            for (String k : detectors.get(d).keywords()) {
                List<Integer> ds = byKeyword.computeIfAbsent(k, x -> new ArrayList<>());
                if (!ds.contains(d)) {
                    ds.add(d);
                }
            }
        }
        for (String extra : extraKeywords) {
            if (byKeyword.putIfAbsent(extra, List.of()) != null) {
                throw new IllegalArgumentException("extra keyword " + extra + " is a detector's keyword");
            }
        }
        List<String> keywords = new ArrayList<>(byKeyword.keySet());
        int[][] keywordDetectors = new int[keywords.size()][];
        for (int k = 0; k < keywords.size(); k++) {
            keywordDetectors[k] = byKeyword.get(keywords.get(k)).stream().mapToInt(Integer::intValue).toArray();
        }

        boolean[] inRun = new boolean[keywords.size()];
        for (int k = 0; k < keywords.size(); k++) {
            int[] ds = keywordDetectors[k];
            boolean all = ds.length > 0 && !reportedEverywhere.contains(keywords.get(k));
            for (int d : ds) {
                Detector det = detectors.get(d);
                all &= EncodedDetectors.keywordsInBase64Run(det) || LongRunKeywords.inLongRun(det, keywords.get(k));
            }
            inRun[k] = all;
        }
        return new KeywordPrefilter(keywords, keywordDetectors, inRun, detectors.size(), vector && VECTOR_AVAILABLE);
    }

    /** An Aho–Corasick automaton as a byte-indexed DFA (see the class comment) over some of the keywords. */
    private record Automaton(int[] table, int[][] outputs) {

        static Automaton of(List<String> keywords, java.util.function.IntPredicate included) {
            // trie
            List<int[]> next = new ArrayList<>();
            List<List<Integer>> out = new ArrayList<>();
            next.add(filled());
            out.add(new ArrayList<>());
            for (int k = 0; k < keywords.size(); k++) {
                if (!included.test(k)) {
                    continue;
                }
                int s = 0;
                for (byte b : keywords.get(k).getBytes(StandardCharsets.US_ASCII)) {
                    int c = b & 0xff;
                    if (next.get(s)[c] < 0) {
                        next.get(s)[c] = next.size();
                        next.add(filled());
                        out.add(new ArrayList<>());
                    }
                    s = next.get(s)[c];
                }
                out.get(s).add(k);
            }
            // failure links, breadth first; complete the transition function (DFA)
            int n = next.size();
            int[] fail = new int[n];
            ArrayDeque<Integer> queue = new ArrayDeque<>();
            for (int c = 0; c < 256; c++) {
                int t = next.get(0)[c];
                if (t < 0) {
                    next.get(0)[c] = 0;
                } else {
                    fail[t] = 0;
                    queue.add(t);
                }
            }
            while (!queue.isEmpty()) {
                int s = queue.poll();
                out.get(s).addAll(out.get(fail[s]));
                for (int c = 0; c < 256; c++) {
                    int t = next.get(s)[c];
                    if (t < 0) {
                        next.get(s)[c] = next.get(fail[s])[c];
                    } else {
                        fail[t] = next.get(fail[s])[c];
                        queue.add(t);
                    }
                }
            }
            if ((long) n * 256 > Integer.MAX_VALUE / 4) {
                throw new IllegalArgumentException("keywords: too many (" + n + " automaton states)");
            }
            int[][] outputs = new int[n][];
            for (int s = 0; s < n; s++) {
                outputs[s] = out.get(s).stream().mapToInt(Integer::intValue).toArray();
            }
            int[] table = new int[n * 256];
            for (int s = 0; s < n; s++) {
                for (int c = 0; c < 256; c++) {
                    int lower = c >= 'A' && c <= 'Z' ? c + 32 : c;
                    int t = next.get(s)[lower];
                    int entry = t << 8;
                    if (outputs[t].length > 0) {
                        entry |= 0x80000000;
                    }
                    table[(s << 8) | c] = entry;
                }
            }
            return new Automaton(table, outputs);
        }
    }

    private static int[] filled() {
        int[] a = new int[256];
        Arrays.fill(a, -1);
        return a;
    }

    /**
     * Reports every keyword occurrence that starts at an index in {@code [from, to)} and ends at or before
     * {@code limit}: {@code sink.hit(keyword, end)} once per occurrence, with {@code end} the index just
     * after its last byte. No state carries over between calls: a stream scanned in pieces passes each
     * piece's start positions, with enough bytes after them ({@link #lookAhead()}) before {@code limit}
     * to decide a keyword starting at the last one. Bytes of {@code buf} at or after {@code limit} may be
     * read but never count. Occurrences are reported in no particular order.
     *
     * <p>A <em>run keyword</em> (a base64 stem, see {@link EncodedDetectors#keywordsInBase64Run}, or a
     * vendor prefix of {@link LongRunKeywords}, in both cases for every detector that has it) counts
     * only inside a run: with the run characters ({@code [A-Za-z0-9+/_-]}) right before it (at most {@value #RUN}, not before index 0) and right after it (at most {@value #RUN},
     * before {@code limit}), at least {@value #RUN} characters. Bytes before {@code from} are read for
     * that, and for nothing else.
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= from <= to <= limit <= buf.length}
     */
    public void scan(byte[] buf, int from, int to, int limit, HitSink sink) {
        Objects.checkFromToIndex(from, to, limit);
        Objects.checkFromToIndex(limit, buf.length, buf.length);
        if (from == to) {
            return;
        }
        int p = from;
        HitSink checked = anyInRun ? (k, e) -> {
            if (!inRun[k] || inRun(buf, e - keywordLength[k], e, limit)) {
                sink.hit(k, e);
            }
        } : sink;
        if (teddy != null && to - from >= TeddyScan.STEP) {
            int stop = TeddyScan.stop(buf, from, to);
            if (stop > from) {
                int done = from;
                if (anyInRun && isRunChar(buf[from])) {
                    done = scanRuns(buf, from, from + 1, from, stop, limit, sink, done); // a run begun earlier
                }
                done = teddy.scan(buf, from, to, limit, sink, this, done);
                if (anyInRun && isRunChar(buf[stop - 1])) {
                    scanRuns(buf, stop - 1, stop, from, stop, limit, sink, done); // a run going on after stop
                }
                p = stop;
                if (p == to) {
                    return;
                }
            }
        }
        // the automaton, from its start state at p: it sees only keywords starting at p or later; it reads
        // until the last keyword that starts before `to` could end, and drops those starting at `to` or later
        int end = (int) Math.min(limit, (long) to + maxKeywordLength - 1);
        if (end == to) {
            scanEnds(buf, p, end, START_STATE, checked);
            return;
        }
        final int startLimit = to;
        scanEnds(buf, p, end, START_STATE, (k, e) -> {
            if (e - keywordLength[k] < startLimit) {
                checked.hit(k, e);
            }
        });
    }

    /**
     * Bytes after the last start position of a {@link #scan} that must lie before its limit for the scan
     * to decide every keyword starting there: the longest keyword minus one, plus {@value #RUN} when
     * run keywords exist.
     */
    public int lookAhead() {
        return Math.max(0, maxKeywordLength - 1) + (anyInRun ? RUN : 0);
    }

    /** A character that continues a run for {@link #scan}'s run keywords. */
    static boolean isRunChar(byte b) {
        return EncodedDetectors.isBase64Char(b);
    }

    /** Answers whether keyword {@code k} is a run keyword (see {@link #scan}). */
    boolean isRunKeyword(int k) {
        return inRun[k];
    }

    /** The run condition of {@link #scan} for an occurrence at {@code buf[s, e)}. */
    static boolean inRun(byte[] buf, int s, int e, int limit) {
        int n = e - s;
        for (int i = s - 1; i >= Math.max(0, s - RUN) && isRunChar(buf[i]); i--) {
            n++;
        }
        for (int i = e; i < Math.min(limit, e + RUN) && isRunChar(buf[i]); i++) {
            n++;
        }
        return n >= RUN;
    }

    /**
     * For the vector scan: reports the run keywords in each run of run characters that meets
     * {@code buf[i0, i1)}, from where it begins (not before {@code max(from, done)}) to where it ends
     * (not after {@code limit}), for starts before {@code startLimit}; returns the end of the last run
     * scanned (or {@code done}), before which no run is scanned again.
     */
    int scanRuns(byte[] buf, int i0, int i1, int from, int startLimit, int limit, HitSink sink, int done) {
        int low = Math.max(from, done);
        for (int i = Math.max(i0, low); i < i1; i++) {
            if (!isRunChar(buf[i])) {
                continue;
            }
            int r = i;
            while (r > low && isRunChar(buf[r - 1])) {
                r--;
            }
            int j = i + 1;
            while (j < limit && isRunChar(buf[j])) {
                j++;
            }
            final int[] t = runTable;
            int st = START_STATE;
            for (int x = r; x < j; x++) {
                int entry = t[st | (buf[x] & 0xff)];
                st = entry & 0x7fffffff;
                if (entry < 0) {
                    for (int k : runOutputs[st >>> 8]) {
                        int s = x + 1 - keywordLength[k];
                        if (s >= r && s < startLimit && inRun(buf, s, x + 1, limit)) {
                            sink.hit(k, x + 1);
                        }
                    }
                }
            }
            done = j;
            low = j;
            i = j;
        }
        return done;
    }

    /**
     * Returns the first index {@code i} in {@code [from, to)} where {@code a[i]} is {@code "}, skipping
     * quotes right after a single backslash (escaped; a quote after two or more backslashes is returned),
     * or {@code to}: the caller checks the escape parity. With vectors when the vector scan runs.
     */
    int indexOfQuote(byte[] a, int from, int to) {
        if (teddy != null) {
            return TeddyScan.indexOfQuote(a, from, to);
        }
        for (int i = from; i < to; i++) {
            if (a[i] == '"' && (i < 2 || a[i - 1] != '\\' || a[i - 2] == '\\')) {
                return i;
            }
        }
        return to;
    }

    /** Answers whether the vector scan runs (see the class comment). */
    public boolean vectorized() {
        return teddy != null;
    }

    /**
     * Answers whether bytes {@code [from, kw.length)} of {@code kw} (lowercase ASCII) occur at
     * {@code buf[start + from]} and on, letters in either case.
     */
    static boolean matchesAt(byte[] buf, int start, byte[] kw, int from) {
        for (int i = from; i < kw.length; i++) {
            int c = buf[start + i];
            int k = kw[i];
            if (c != k && (k < 'a' || k > 'z' || (c | 0x20) != k)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The automaton over {@code buf[from, to)} continuing from {@code state}: reports every keyword that
     * ends in the range and returns the state after it.
     */
    private int scanEnds(byte[] buf, int from, int to, int state, HitSink sink) {
        Objects.checkFromToIndex(from, to, buf.length);
        int len = to - from;
        if (len < LANE_THRESHOLD) {
            return scanOne(buf, from, to, state, sink);
        }
        // Four independent automaton runs over four quarters, interleaved in one loop: the table loads of
        // one byte no longer wait for the previous byte's load (instruction-level parallelism). Lanes 1-3
        // start from the root (maxKeywordLength - 1) bytes early and ignore hits that end inside that
        // overlap, so each occurrence is reported exactly once; the final state is exact because the
        // last lane has read far more than maxKeywordLength bytes.
        int quarter = len / 4;
        int overlap = Math.max(0, maxKeywordLength - 1);
        int p1 = from + quarter;
        int p2 = from + 2 * quarter;
        int p3 = from + 3 * quarter;
        int a = from;
        int b = p1 - overlap;
        int c = p2 - overlap;
        int d = p3 - overlap;
        final int[] t = table;
        int s0 = state;
        int s1 = START_STATE;
        int s2 = START_STATE;
        int s3 = START_STATE;
        int common = quarter; // every lane has at least this many bytes; lane 0 has exactly this many
        // Steps where a lane reached an output state are noted in a ring (a store, no loop exit, no call
        // on the common path) and reported in batches: a loop exit or a call at each hit cost more than
        // the whole automaton step when keywords are frequent.
        int[] ringStep = new int[RING];
        int[] ringEntry = new int[RING * 4];
        int[] states = {s0, s1, s2, s3};
        for (int i = 0; i < common; ) {
            int[] progress = {i, 0};
            lanes(t, buf, a, b, c, d, common, states, ringStep, ringEntry, progress);
            reportNoted(ringStep, ringEntry, 0, progress[1], a, b, c, d, from, p1, p2, p3, sink);
            i = progress[0];
        }
        s0 = states[0];
        s1 = states[1];
        s2 = states[2];
        s3 = states[3];
        // tails: lanes 1-2 have `overlap` bytes left before the next lane's start, lane 3 runs to the end
        scanTail(buf, b + common, p2, s1, p1, sink);
        scanTail(buf, c + common, p3, s2, p2, sink);
        return scanTail(buf, d + common, to, s3, p3, sink);
    }

    /** Output steps noted before they are reported; a power of two. */
    private static final int RING = 256;

    /**
     * The four-lane automaton loop, from step {@code progress[0]} until {@code steps} or until the ring is
     * full; leaves the next step in {@code progress[0]} and the number of noted steps in {@code progress[1]}.
     * Static, with primitives and arrays only, so the JIT keeps the four states in registers. The range
     * checks up front also make the method too large for the JIT to inline into {@link #scan}
     * (above {@code -XX:FreqInlineSize}, 325 bytes of bytecode): inlined there, among the caller's live
     * values, the loop ran at about half the speed (measured on JDK 17, 32 KiB slices).
     */
    private static void lanes(int[] t, byte[] buf, int a, int b, int c, int d, int steps, int[] states, int[] ringStep,
                              int[] ringEntry, int[] progress) {
        Objects.checkFromIndexSize(a, steps, buf.length);
        Objects.checkFromIndexSize(b, steps, buf.length);
        Objects.checkFromIndexSize(c, steps, buf.length);
        Objects.checkFromIndexSize(d, steps, buf.length);
        Objects.checkFromIndexSize(0, RING, ringStep.length);
        Objects.checkFromIndexSize(0, 4 * RING, ringEntry.length);
        Objects.checkFromIndexSize(0, 4, states.length);
        Objects.checkFromIndexSize(0, 2, progress.length);
        int s0 = states[0];
        int s1 = states[1];
        int s2 = states[2];
        int s3 = states[3];
        int noted = 0;
        int i = progress[0];
        for (; i < steps; i++) {
            int e0 = t[s0 | (buf[a + i] & 0xff)];
            int e1 = t[s1 | (buf[b + i] & 0xff)];
            int e2 = t[s2 | (buf[c + i] & 0xff)];
            int e3 = t[s3 | (buf[d + i] & 0xff)];
            if ((e0 | e1 | e2 | e3) < 0) {
                int k = noted & (RING - 1);
                ringStep[k] = i;
                ringEntry[4 * k] = e0;
                ringEntry[4 * k + 1] = e1;
                ringEntry[4 * k + 2] = e2;
                ringEntry[4 * k + 3] = e3;
                if (++noted == RING) {
                    s0 = e0 & 0x7fffffff;
                    s1 = e1 & 0x7fffffff;
                    s2 = e2 & 0x7fffffff;
                    s3 = e3 & 0x7fffffff;
                    i++;
                    break;
                }
            }
            s0 = e0 & 0x7fffffff;
            s1 = e1 & 0x7fffffff;
            s2 = e2 & 0x7fffffff;
            s3 = e3 & 0x7fffffff;
        }
        states[0] = s0;
        states[1] = s1;
        states[2] = s2;
        states[3] = s3;
        progress[0] = i;
        progress[1] = noted;
    }

    private void reportNoted(int[] ringStep, int[] ringEntry, int from, int to, int a, int b, int c, int d, int min0,
                             int min1, int min2, int min3, HitSink sink) {
        for (int n = from; n < to; n++) {
            int k = n & (RING - 1);
            int step = ringStep[k];
            int e0 = ringEntry[4 * k];
            int e1 = ringEntry[4 * k + 1];
            int e2 = ringEntry[4 * k + 2];
            int e3 = ringEntry[4 * k + 3];
            if (e0 < 0) {
                report(e0, a + step + 1, min0, sink);
            }
            if (e1 < 0) {
                report(e1, b + step + 1, min1, sink);
            }
            if (e2 < 0) {
                report(e2, c + step + 1, min2, sink);
            }
            if (e3 < 0) {
                report(e3, d + step + 1, min3, sink);
            }
        }
    }

    /** Inputs shorter than this are scanned in one lane. */
    static final int LANE_THRESHOLD = 4096;

    private void report(int entry, int endExclusive, int minEndExclusive, HitSink sink) {
        if (endExclusive <= minEndExclusive) {
            return;
        }
        for (int k : outputs[(entry & 0x7fffffff) >>> 8]) {
            sink.hit(k, endExclusive);
        }
    }

    private int scanTail(byte[] buf, int from, int to, int state, int minEndExclusive, HitSink sink) {
        final int[] t = table;
        int s = state;
        for (int i = from; i < to; i++) {
            int e = t[s | (buf[i] & 0xff)];
            if (e < 0) {
                report(e, i + 1, minEndExclusive, sink);
            }
            s = e & 0x7fffffff;
        }
        return s;
    }

    private int scanOne(byte[] buf, int from, int to, int state, HitSink sink) {
        final int[] t = table;
        int s = state;
        for (int i = from; i < to; i++) {
            int e = t[s | (buf[i] & 0xff)];
            if (e < 0) {
                s = e & 0x7fffffff;
                for (int k : outputs[s >>> 8]) {
                    sink.hit(k, i + 1);
                }
            } else {
                s = e;
            }
        }
        return s;
    }

    /**
     * Answers which detectors have at least one keyword in {@code buf[off, off + len)}, in one pass
     * (case-insensitive for ASCII letters). Word-start conditions of detectors are not applied here.
     *
     * @return detector indexes, as given to {@link #of}
     */
    public BitSet candidates(byte[] buf, int off, int len) {
        BitSet found = new BitSet(detectorCount);
        scan(buf, off, off + len, off + len, (k, end) -> {
            for (int d : keywordDetectors[k]) {
                found.set(d);
            }
        });
        return found;
    }

    /** Returns the distinct keywords, in the order keyword indexes refer to. */
    public List<String> keywords() {
        return keywords;
    }

    /** Returns the detector indexes that have keyword {@code keyword}. Callers must not modify it. */
    int[] detectorsOf(int keyword) {
        return keywordDetectors[keyword];
    }

    /** Returns the length in bytes of keyword {@code keyword}. */
    public int keywordLength(int keyword) {
        return keywordLength[keyword];
    }

    /** Returns the length in bytes of the longest keyword. */
    public int maxKeywordLength() {
        return maxKeywordLength;
    }

    /** Returns the number of automaton states. */
    public int stateCount() {
        return outputs.length;
    }

    @Override
    public String toString() {
        return "KeywordPrefilter[" + keywords.size() + " keywords, " + outputs.length + " states, "
                + (teddy != null ? "vector" : "scalar") + " scan]";
    }

}
