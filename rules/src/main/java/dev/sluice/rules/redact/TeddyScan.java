package dev.sluice.rules.redact;

import java.util.ArrayList;
import java.util.List;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The vector (SIMD) keyword scan behind {@link KeywordPrefilter}: the "Teddy" algorithm, 32 text
 * positions per step, with 16 buckets and four-byte fingerprints. Loaded only when the
 * {@code jdk.incubator.vector} module is present and the CPU has 256-bit vectors ({@link #supported()});
 * {@link KeywordPrefilter} falls back to its scalar automaton otherwise.
 *
 * <p>How it works. Every keyword gets a fingerprint: its first four bytes (positions past the end of a
 * shorter keyword match anything), a letter admitting both cases (they differ only in the high nibble).
 * Keywords are grouped into 16 buckets, in two banks of eight, one bit per bucket. For each fingerprint
 * position and bank there are two 16-entry tables indexed by the low and the high nibble of a text byte;
 * entry {@code n} holds the bits of the buckets whose fingerprint admits a byte with that nibble at that
 * position. One step loads the text at {@code p} to {@code p + 3} as 32-byte vectors, looks the nibbles
 * up with byte shuffles ({@code selectFrom}) and ANDs the results per bank: a non-zero lane {@code i}
 * says that some keyword of the set buckets may start at {@code p + i}. Each candidate is verified
 * against the keywords that share its first two bytes (four bytes, then eight, in one comparison each,
 * letters in either case), so the scan reports exactly the keyword occurrences, never an approximation.
 * Buckets are formed greedily, merging the pair of groups whose merged fingerprint admits the fewest
 * four-byte windows of a built-in sample of prompt-like text (plus an estimate from byte frequencies),
 * then refined by moving single keywords between buckets while that total falls: about 11,600
 * candidates per MiB of the benchmark prompt (8,300 keyword occurrences; 9,300 of the 32,768 steps
 * flagged) for the 89 keywords of the built-in detectors that are not run keywords (23,800 candidates
 * and 15,300 flagged steps when the vendor prefixes of {@link LongRunKeywords} were in the buckets too).
 *
 * <p>Run keywords (base64 stems and long-run vendor prefixes, see {@link KeywordPrefilter#scan}) are
 * not in the buckets: a pass of
 * its own flags steps with sixteen base64 characters in a row at an offset divisible by eight, and
 * {@link KeywordPrefilter#scanRuns} scans those runs.
 *
 * <p>Reference: the Teddy algorithm of Intel's Hyperscan (G. Langdale), as described in the README of
 * the Rust {@code aho-corasick} crate's {@code packed/teddy} module. Immutable and thread-safe.
 */
final class TeddyScan {

    private static final VectorSpecies<Byte> SPECIES = ByteVector.SPECIES_256;
    /** Text positions examined per step. */
    static final int STEP = 32;
    /** Bytes a step at {@code p} reads: {@code [p, p + READ)} (the run test reads 8 bytes past the step). */
    private static final int READ = STEP + 8;
    /** Fingerprint length in bytes. */
    private static final int FINGERPRINT = 4;
    private static final int BUCKETS = 16;

    /**
     * Tables of 32 bytes (16 entries, repeated): index {@code 2 * (4 * bank + position)} for the low
     * nibble, {@code + 1} for the high nibble.
     */
    private final byte[][] tables = new byte[4 * FINGERPRINT][STEP];
    private final byte[][] keywordBytes;
    /**
     * Verification index: for each folded two-byte prefix (little-endian), 1 + the index in
     * {@link #byPrefix} of the first keyword starting with it, or 0 for none. 256 KiB, of which the
     * candidates touch only the few cache lines of real prefixes.
     */
    private final int[] prefixStart = new int[1 << 16];
    /** Keyword indexes grouped by two-byte prefix, each group ended by -1. */
    private final int[] byPrefix;
    /**
     * Per keyword, for an exact test of its first four bytes (little-endian) in one comparison:
     * {@code (text | prefixFold) & prefixMask == prefix}, where {@code prefixFold} has 0x20 at the letter
     * positions (A–Z and a–z both become a–z there; other bytes must be equal) and {@code prefixMask}
     * covers the keyword's bytes.
     */
    private final int[] prefix;
    private final int[] prefixFold;
    private final int[] prefixMask;
    /** The same for bytes 4 to 11 of each keyword, as one little-endian long. */
    private final long[] middle;
    private final long[] middleFold;
    private final long[] middleMask;

    /**
     * Answers whether the vector scan can run here: the module is present (the caller checked) and the
     * JVM offers 256-bit byte vectors on this CPU (AVX2 or better on x86).
     */
    static boolean supported() {
        return ByteVector.SPECIES_PREFERRED.vectorBitSize() >= 256;
    }

    /**
     * @param keywords distinct lowercase ASCII keywords of at least two bytes; index {@code k} is reported
     *                 as keyword {@code k}
     */
    TeddyScan(List<byte[]> keywords, boolean[] inRun) {
        this.keywordBytes = keywords.toArray(new byte[0][]);
        this.hasRunKeywords = anyTrue(inRun);
        this.prefix = new int[keywordBytes.length];
        this.prefixFold = new int[keywordBytes.length];
        this.prefixMask = new int[keywordBytes.length];
        this.middle = new long[keywordBytes.length];
        this.middleFold = new long[keywordBytes.length];
        this.middleMask = new long[keywordBytes.length];
        java.util.Map<Integer, List<Integer>> groupsByPrefix = new java.util.TreeMap<>();
        for (int k = 0; k < keywordBytes.length; k++) {
            byte[] kw = keywordBytes[k];
            int folded = 0;
            for (int i = 0; i < Math.min(4, kw.length); i++) {
                prefix[k] |= (kw[i] & 0xff) << (8 * i);
                prefixMask[k] |= 0xff << (8 * i);
                if (kw[i] >= 'a' && kw[i] <= 'z') {
                    prefixFold[k] |= 0x20 << (8 * i);
                }
                folded |= ((kw[i] | 0x20) & 0xff) << (8 * i);
            }
            for (int i = 4; i < Math.min(12, kw.length); i++) {
                middle[k] |= (kw[i] & 0xffL) << (8 * (i - 4));
                middleMask[k] |= 0xffL << (8 * (i - 4));
                if (kw[i] >= 'a' && kw[i] <= 'z') {
                    middleFold[k] |= 0x20L << (8 * (i - 4));
                }
            }
            if (!inRun[k]) {
                groupsByPrefix.computeIfAbsent(folded & 0xffff, x -> new ArrayList<>()).add(k);
            }
        }
        this.byPrefix = new int[keywordBytes.length + groupsByPrefix.size() + 1];
        int at = 0;
        for (var e : groupsByPrefix.entrySet()) {
            prefixStart[e.getKey()] = at + 1;
            for (int k : e.getValue()) {
                byPrefix[at++] = k;
            }
            byPrefix[at++] = -1;
        }
        // run keywords are not in the buckets: the scan flags runs instead (see #scan)
        List<Integer> bucketed = new ArrayList<>();
        for (int k = 0; k < keywordBytes.length; k++) {
            if (!inRun[k]) {
                bucketed.add(k);
            }
        }
        List<Group> groups = new ArrayList<>();
        for (int k : bucketed) {
            groups.add(Group.of(keywordBytes[k]));
        }
        // agglomerative grouping into BUCKETS: merge the pair whose union adds the fewest expected
        // matches; pair costs are kept and only those of the merged group recomputed
        int n = groups.size();
        double[][] added = new double[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = i + 1; j < n; j++) {
                added[i][j] = addedCost(groups.get(i), groups.get(j));
            }
        }
        boolean[] gone = new boolean[n];
        int[] mergedInto = new int[n];
        for (int left = n; left > BUCKETS; left--) {
            double best = Double.MAX_VALUE;
            int bi = -1;
            int bj = -1;
            for (int i = 0; i < n; i++) {
                for (int j = i + 1; j < n && !gone[i]; j++) {
                    if (!gone[j] && added[i][j] < best) {
                        best = added[i][j];
                        bi = i;
                        bj = j;
                    }
                }
            }
            groups.set(bi, groups.get(bi).merge(groups.get(bj)));
            gone[bj] = true;
            mergedInto[bj] = bi;
            for (int k = 0; k < n; k++) {
                if (!gone[k] && k != bi) {
                    double c = addedCost(groups.get(Math.min(k, bi)), groups.get(Math.max(k, bi)));
                    added[Math.min(k, bi)][Math.max(k, bi)] = c;
                }
            }
        }
        // the greedy merge: then single keywords moved between buckets while that lowers the total cost
        // (beyond ~120 keywords the greedy order alone leaves buckets that admit far more than they need)
        List<List<Integer>> members = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (!gone[i]) {
                members.add(new ArrayList<>(List.of(i)));
            } else {
                members.add(null);
            }
        }
        for (int k = 0; k < n; k++) {
            // each keyword joined its group's first index when merged: follow the merges
            int g = k;
            while (gone[g]) {
                g = mergedInto[g];
            }
            if (g != k) {
                members.get(g).add(k);
            }
        }
        List<List<Integer>> buckets = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (!gone[i]) {
                List<Integer> ks = new ArrayList<>();
                for (int m : members.get(i)) {
                    ks.add(bucketed.get(m));
                }
                buckets.add(ks);
            }
        }
        groups = refine(buckets);
        for (int j = 0; j < groups.size(); j++) {
            Group g = groups.get(j);
            int bank = j / 8;
            byte bit = (byte) (1 << (j % 8));
            for (int p = 0; p < FINGERPRINT; p++) {
                for (int nibble = 0; nibble < 16; nibble++) {
                    if ((g.lo[p] >>> nibble & 1) != 0) {
                        tables[2 * (4 * bank + p)][nibble] |= bit;
                    }
                    if ((g.hi[p] >>> nibble & 1) != 0) {
                        tables[2 * (4 * bank + p) + 1][nibble] |= bit;
                    }
                }
            }
        }
        for (byte[] t : tables) {
            System.arraycopy(t, 0, t, 16, 16);
        }
        // run characters by nibbles: bit (high nibble - 2) in the low-nibble table, as in the buckets
        for (int c = 0; c < 128 && hasRunKeywords; c++) {
            if (KeywordPrefilter.isRunChar((byte) c)) {
                int bit = 1 << ((c >>> 4) - 2);
                runLow[c & 15] |= (byte) bit;
                runHigh[c >>> 4] = (byte) bit;
            }
        }
        System.arraycopy(runLow, 0, runLow, 16, 16);
        System.arraycopy(runHigh, 0, runHigh, 16, 16);
    }

    /** Whether some keyword is a run keyword (then {@link #steps} also flags runs). */
    private final boolean hasRunKeywords;
    /** Run characters ({@link KeywordPrefilter#isRunChar}) as two nibble tables of 32 bytes. */
    private final byte[] runLow = new byte[STEP];
    private final byte[] runHigh = new byte[STEP];

    private static boolean anyTrue(boolean[] a) {
        for (boolean b : a) {
            if (b) {
                return true;
            }
        }
        return false;
    }

    /**
     * Where {@link #scan} stops: the first start position it leaves to the caller, from {@code from}
     * in steps of {@value #STEP} while a whole step fits before {@code to} and its reads fit in {@code buf}.
     */
    static int stop(byte[] buf, int from, int to) {
        int end = Math.min(to - STEP, buf.length - READ);
        return end < from ? from : from + STEP * ((end - from) / STEP + 1);
    }

    /**
     * Reports every occurrence of a keyword other than a run keyword that starts at an index in
     * {@code [from, stop(buf, from, to))} and ends at or before {@code limit} (bytes from {@code limit}
     * to the end of the array are read but never reported); for each step holding eight run characters
     * in a row at an offset from {@code from} divisible by eight, and eight more after them, lets {@code runs} scan the run
     * keywords of that run ({@link KeywordPrefilter#scanRuns}). Every run of at least
     * {@link KeywordPrefilter#RUN} (24) characters inside {@code [from, stop)} holds two such blocks of
     * eight in a row, which is what flags a step. The caller
     * scans from {@code stop} on another way. Returns the end of the last run scanned, or {@code done}.
     */
    int scan(byte[] buf, int from, int to, int limit, KeywordPrefilter.HitSink sink, KeywordPrefilter runs, int done) {
        int stop = stop(buf, from, to);
        int end = stop - STEP;
        int[] flaggedAt = new int[BATCH];
        if (hasRunKeywords) {
            // a pass of its own: in the bucket loop the run test cost three times as much (JDK 17)
            for (int p = from; p <= end; ) {
                long r = runSteps(buf, p, end, flaggedAt);
                p = (int) (r >>> 32);
                int flagged = (int) r;
                for (int f = 0; f < flagged; f++) {
                    int at = flaggedAt[f];
                    if (at + STEP > done) {
                        done = runs.scanRuns(buf, at, at + STEP, from, stop, limit, sink, done);
                    }
                }
            }
        }
        byte[] flaggedLanes = new byte[STEP * BATCH];
        int p = from;
        while (p <= end) {
            long r = steps(buf, p, end, flaggedAt, flaggedLanes);
            p = (int) (r >>> 32);
            int flagged = (int) r;
            for (int f = 0; f < flagged; f++) {
                int at = flaggedAt[f];
                int o = STEP * f;
                // one bit per non-zero lane, so one loop visits the step's candidates
                long positions = nonZeroBytes((long) LANES.get(flaggedLanes, o))
                        | nonZeroBytes((long) LANES.get(flaggedLanes, o + 8)) << 8
                        | nonZeroBytes((long) LANES.get(flaggedLanes, o + 16)) << 16
                        | nonZeroBytes((long) LANES.get(flaggedLanes, o + 24)) << 24;
                while (positions != 0) {
                    int lane = Long.numberOfTrailingZeros(positions);
                    positions &= positions - 1;
                    verify(buf, at + lane, limit, sink);
                }
            }
        }
        return done;
    }

    private static final java.lang.invoke.VarHandle LANES =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

    /** Bit {@code i} set when byte {@code i} (little-endian) of {@code lanes} is not zero. */
    private static long nonZeroBytes(long lanes) {
        long high = ((lanes & 0x7F7F7F7F7F7F7F7FL) + 0x7F7F7F7F7F7F7F7FL | lanes) & 0x8080808080808080L;
        return ((high >>> 7) * 0x0102040810204080L) >>> 56;
    }

    /**
     * The high nibble of each byte: shifted as 16-bit lanes (one instruction; x86 has no byte shift,
     * and a byte-lane shift on JDK 17 costs several), the bits from the neighbouring byte masked off.
     */
    private static ByteVector highNibbles(ByteVector v) {
        return v.reinterpretAsShorts().lanewise(VectorOperators.LSHR, 4).reinterpretAsBytes().and((byte) 0x0f);
    }

    /** Flagged steps noted by {@link #steps} before their candidates are verified. */
    private static final int BATCH = 64;

    /**
     * The vector loop from {@code p} while {@code p <= end}, or until {@value #BATCH} steps had
     * candidates: notes each such step's position in {@code flaggedAt} and its lanes, as four
     * little-endian longs whose non-zero bytes are the candidate positions, in {@code flaggedLanes}. Returns the next position in the upper 32 bits and the
     * number of noted steps in the lower. It makes no calls: on JDK 17 a call inside the loop makes the
     * JIT re-box the live table vectors, which cost more than the step.
     */
    private long steps(byte[] buf, int p, int end, int[] flaggedAt, byte[] flaggedLanes) {
        byte[][] t = tables;
        ByteVector a0l = ByteVector.fromArray(SPECIES, t[0], 0);
        ByteVector a0h = ByteVector.fromArray(SPECIES, t[1], 0);
        ByteVector a1l = ByteVector.fromArray(SPECIES, t[2], 0);
        ByteVector a1h = ByteVector.fromArray(SPECIES, t[3], 0);
        ByteVector a2l = ByteVector.fromArray(SPECIES, t[4], 0);
        ByteVector a2h = ByteVector.fromArray(SPECIES, t[5], 0);
        ByteVector a3l = ByteVector.fromArray(SPECIES, t[6], 0);
        ByteVector a3h = ByteVector.fromArray(SPECIES, t[7], 0);
        ByteVector b0l = ByteVector.fromArray(SPECIES, t[8], 0);
        ByteVector b0h = ByteVector.fromArray(SPECIES, t[9], 0);
        ByteVector b1l = ByteVector.fromArray(SPECIES, t[10], 0);
        ByteVector b1h = ByteVector.fromArray(SPECIES, t[11], 0);
        ByteVector b2l = ByteVector.fromArray(SPECIES, t[12], 0);
        ByteVector b2h = ByteVector.fromArray(SPECIES, t[13], 0);
        ByteVector b3l = ByteVector.fromArray(SPECIES, t[14], 0);
        ByteVector b3h = ByteVector.fromArray(SPECIES, t[15], 0);
        int flagged = 0;
        for (; p <= end; p += STEP) {
            ByteVector v0 = ByteVector.fromArray(SPECIES, buf, p);
            ByteVector v1 = ByteVector.fromArray(SPECIES, buf, p + 1);
            ByteVector v2 = ByteVector.fromArray(SPECIES, buf, p + 2);
            ByteVector v3 = ByteVector.fromArray(SPECIES, buf, p + 3);
            ByteVector n0l = v0.and((byte) 0x0f);
            ByteVector n0h = highNibbles(v0);
            ByteVector n1l = v1.and((byte) 0x0f);
            ByteVector n1h = highNibbles(v1);
            ByteVector n2l = v2.and((byte) 0x0f);
            ByteVector n2h = highNibbles(v2);
            ByteVector n3l = v3.and((byte) 0x0f);
            ByteVector n3h = highNibbles(v3);
            ByteVector ra = n0l.selectFrom(a0l).and(n0h.selectFrom(a0h))
                    .and(n1l.selectFrom(a1l)).and(n1h.selectFrom(a1h))
                    .and(n2l.selectFrom(a2l)).and(n2h.selectFrom(a2h))
                    .and(n3l.selectFrom(a3l)).and(n3h.selectFrom(a3h));
            ByteVector rb = n0l.selectFrom(b0l).and(n0h.selectFrom(b0h))
                    .and(n1l.selectFrom(b1l)).and(n1h.selectFrom(b1h))
                    .and(n2l.selectFrom(b2l)).and(n2h.selectFrom(b2h))
                    .and(n3l.selectFrom(b3l)).and(n3h.selectFrom(b3h));
            ByteVector lanes = ra.or(rb);
            if (lanes.compare(VectorOperators.NE, (byte) 0).anyTrue()) {
                // stored as longs: on JDK 17 a vector store is cheap, while VectorMask.toLong() and lane()
                // are not intrinsics for these shapes and cost more than the whole step
                lanes.intoArray(flaggedLanes, STEP * flagged);
                flaggedAt[flagged] = p;
                if (++flagged == BATCH) {
                    p += STEP;
                    break;
                }
            }
        }
        return (long) p << 32 | flagged;
    }

    /**
     * The run test from {@code p} while {@code p <= end}, or until {@value #BATCH} steps are flagged:
     * notes each step whose bytes hold sixteen run characters in a row at an offset divisible by 8
     * (two whole 8-byte blocks of the step grid, the second perhaps in the next step, so it reads
     * {@code [p, p + READ)}). Returns the next position in the upper 32 bits and the number of noted
     * steps in the lower.
     */
    private long runSteps(byte[] buf, int p, int end, int[] flaggedAt) {
        ByteVector rl = ByteVector.fromArray(SPECIES, runLow, 0);
        ByteVector rh = ByteVector.fromArray(SPECIES, runHigh, 0);
        int flagged = 0;
        for (; p <= end; p += STEP) {
            ByteVector v0 = ByteVector.fromArray(SPECIES, buf, p);
            ByteVector v8 = ByteVector.fromArray(SPECIES, buf, p + 8);
            // a class byte is 0 or one class bit (at most 0x20): adding 0x7f sets its top bit exactly
            // when it is not 0; a long lane with all eight top bits set in both is sixteen run characters
            ByteVector both = v0.and((byte) 0x0f).selectFrom(rl).and(highNibbles(v0).selectFrom(rh)).add((byte) 0x7f)
                    .and(v8.and((byte) 0x0f).selectFrom(rl).and(highNibbles(v8).selectFrom(rh)).add((byte) 0x7f));
            if (both.reinterpretAsLongs().and(0x8080808080808080L)
                    .compare(VectorOperators.EQ, 0x8080808080808080L).anyTrue()) {
                flaggedAt[flagged] = p;
                if (++flagged == BATCH) {
                    p += STEP;
                    break;
                }
            }
        }
        return (long) p << 32 | flagged;
    }

    /**
     * Returns the first index {@code i} in {@code [from, to)} where {@code a[i]} is a quote that may be
     * unescaped — every quote except those right after a single backslash ({@code x\"}, an escaped
     * quote when {@code x} is not a backslash itself) — or {@code to}: 32 bytes per step, then the
     * matching step byte by byte. The caller checks the escape parity of what it gets.
     */
    static int indexOfQuote(byte[] a, int from, int to) {
        ByteVector quote = ByteVector.broadcast(SPECIES, (byte) '"');
        ByteVector backslash = ByteVector.broadcast(SPECIES, (byte) '\\');
        int i = from;
        if (i < 2) {
            for (; i < Math.min(2, to); i++) {
                if (a[i] == '"') {
                    return i;
                }
            }
        }
        // two steps at a time while no quote is near
        for (; i + 2 * STEP <= to; i += 2 * STEP) {
            if (ByteVector.fromArray(SPECIES, a, i).eq(quote).or(ByteVector.fromArray(SPECIES, a, i + STEP).eq(quote))
                    .anyTrue()) {
                break;
            }
        }
        for (; i + STEP <= to; i += STEP) {
            VectorMask<Byte> quotes = ByteVector.fromArray(SPECIES, a, i).eq(quote);
            if (quotes.anyTrue()) {
                VectorMask<Byte> afterOne = ByteVector.fromArray(SPECIES, a, i - 1).eq(backslash)
                        .andNot(ByteVector.fromArray(SPECIES, a, i - 2).eq(backslash));
                if (quotes.andNot(afterOne).anyTrue()) {
                    break;
                }
            }
        }
        for (; i < to; i++) {
            if (a[i] == '"' && (a[i - 1] != '\\' || a[i - 2] == '\\')) {
                return i;
            }
        }
        return to;
    }

    /** Reports the keywords that occur at {@code start}; {@code buf[start, start + 4)} exists. */
    private void verify(byte[] buf, int start, int limit, KeywordPrefilter.HitSink sink) {
        int text = (buf[start] & 0xff) | (buf[start + 1] & 0xff) << 8 | (buf[start + 2] & 0xff) << 16
                | (buf[start + 3] & 0xff) << 24;
        int i = prefixStart[(text | 0x2020) & 0xffff] - 1;
        if (i < 0) {
            return;
        }
        for (int k = byPrefix[i]; k >= 0; k = byPrefix[++i]) {
            if (((text | prefixFold[k]) & prefixMask[k]) != prefix[k]) {
                continue;
            }
            byte[] kw = keywordBytes[k];
            int end = start + kw.length;
            if (end > limit) {
                continue;
            }
            if (kw.length > 4) {
                if (start + 12 <= buf.length) {
                    long m = (long) LANES.get(buf, start + 4);
                    if (((m | middleFold[k]) & middleMask[k]) != middle[k]
                            || (kw.length > 12 && !KeywordPrefilter.matchesAt(buf, start, kw, 12))) {
                        continue;
                    }
                } else if (!KeywordPrefilter.matchesAt(buf, start, kw, 4)) {
                    continue;
                }
            }
            sink.hit(k, end);
        }
    }

    /** Passes of {@link #refine} over all keywords at most. */
    private static final int REFINE_PASSES = 4;

    /**
     * Local search after the greedy merge: moves one keyword at a time to the bucket where the sum of
     * the bucket costs falls most, until a pass moves none; returns the buckets' groups.
     */
    private List<Group> refine(List<List<Integer>> buckets) {
        int b = buckets.size();
        if (b == 0) {
            return List.of();
        }
        Group[] single = new Group[keywordBytes.length];
        for (int k = 0; k < single.length; k++) {
            single[k] = Group.of(keywordBytes[k]);
        }
        Group[] g = new Group[b];
        for (int j = 0; j < b; j++) {
            g[j] = union(buckets.get(j), single, -1);
        }
        for (int pass = 0; pass < REFINE_PASSES; pass++) {
            boolean moved = false;
            for (int from = 0; from < b; from++) {
                List<Integer> src = buckets.get(from);
                for (int m = 0; m < src.size() && src.size() > 1; m++) {
                    int k = src.get(m);
                    Group without = union(src, single, k);
                    double saved = g[from].cost() - without.cost();
                    int best = -1;
                    double bestGain = 1e-9;
                    Group bestGroup = null;
                    for (int to = 0; to < b; to++) {
                        if (to == from) {
                            continue;
                        }
                        Group with = g[to].merge(single[k]);
                        double gain = saved - (with.cost() - g[to].cost());
                        if (gain > bestGain) {
                            bestGain = gain;
                            best = to;
                            bestGroup = with;
                        }
                    }
                    if (best >= 0) {
                        src.remove(m--);
                        buckets.get(best).add(k);
                        g[from] = without;
                        g[best] = bestGroup;
                        moved = true;
                    }
                }
            }
            if (!moved) {
                break;
            }
        }
        return List.of(g);
    }

    /** The group of keywords {@code ks} except {@code skip}. */
    private static Group union(List<Integer> ks, Group[] single, int skip) {
        Group u = null;
        for (int k : ks) {
            if (k != skip) {
                u = u == null ? single[k] : u.merge(single[k]);
            }
        }
        return u;
    }

    private static double addedCost(Group a, Group b) {
        return a.merge(b).cost() - a.cost() - b.cost();
    }

    /** Keywords sharing a bucket and the nibble sets their fingerprints admit at each position. */
    private record Group(int[] lo, int[] hi, double cost) {

        static Group of(byte[] kw) {
            int[] lo = new int[FINGERPRINT];
            int[] hi = new int[FINGERPRINT];
            for (int p = 0; p < FINGERPRINT; p++) {
                if (p < kw.length) {
                    int c = kw[p] & 0xff;
                    lo[p] = 1 << (c & 15);
                    hi[p] = 1 << (c >>> 4);
                    if (c >= 'a' && c <= 'z') {
                        hi[p] |= 1 << ((c - 32) >>> 4); // the upper-case letter: same low nibble
                    }
                } else {
                    lo[p] = 0xffff;
                    hi[p] = 0xffff;
                }
            }
            return new Group(lo, hi, cost(lo, hi));
        }

        Group merge(Group o) {
            int[] lo = new int[FINGERPRINT];
            int[] hi = new int[FINGERPRINT];
            for (int p = 0; p < FINGERPRINT; p++) {
                lo[p] = this.lo[p] | o.lo[p];
                hi[p] = this.hi[p] | o.hi[p];
            }
            return new Group(lo, hi, cost(lo, hi));
        }

        /**
         * Expected number of positions of the built-in sample text ({@link #SAMPLE}) that match this
         * fingerprint: the positions that do, plus the probability from byte frequencies times the
         * sample's length (which tells apart groups that match none of it).
         */
        private static double cost(int[] lo, int[] hi) {
            double c = 1;
            for (int p = 0; p < FINGERPRINT; p++) {
                double w = 0;
                for (int h = 0; h < 16; h++) {
                    if ((hi[p] >>> h & 1) == 0) {
                        continue;
                    }
                    for (int l = 0; l < 16; l++) {
                        if ((lo[p] >>> l & 1) != 0) {
                            w += BYTE_FREQUENCY[h << 4 | l];
                        }
                    }
                }
                c *= Math.min(1, w);
            }
            return SAMPLE.matches(lo, hi) + c * SAMPLE.positions;
        }
    }

    /**
     * A small sample of prompt-like text (prose, code, logs, JSON; {@code teddy-sample.txt} next to this
     * class), as its distinct four-byte windows with their counts: the grouping counts how many windows
     * a fingerprint admits, which a byte-frequency estimate cannot (it misses that "qu" or "api." are
     * common). Empty if the resource is missing.
     */
    private static final Sample SAMPLE = Sample.load();

    private record Sample(int[] windows, int[] counts, int[] start, int positions) {

        static Sample load() {
            byte[] text;
            try (var in = TeddyScan.class.getResourceAsStream("teddy-sample.txt")) {
                text = in == null ? new byte[0] : in.readAllBytes();
            } catch (java.io.IOException e) {
                text = new byte[0];
            }
            java.util.Map<Integer, Integer> distinct = new java.util.HashMap<>();
            for (int i = 0; i + FINGERPRINT <= text.length; i++) {
                int w = (text[i] & 0xff) | (text[i + 1] & 0xff) << 8 | (text[i + 2] & 0xff) << 16 | (text[i + 3] & 0xff) << 24;
                distinct.merge(w, 1, Integer::sum);
            }
            // grouped by first byte, so a fingerprint's count visits only the windows its first byte admits
            Integer[] order = distinct.keySet().toArray(new Integer[0]);
            java.util.Arrays.sort(order, java.util.Comparator.comparingInt(w -> w & 0xff));
            int[] windows = new int[order.length];
            int[] counts = new int[order.length];
            int[] start = new int[257];
            for (int k = 0; k < order.length; k++) {
                windows[k] = order[k];
                counts[k] = distinct.get(order[k]);
                start[(order[k] & 0xff) + 1] = k + 1;
            }
            for (int b = 1; b <= 256; b++) {
                start[b] = Math.max(start[b], start[b - 1]);
            }
            return new Sample(windows, counts, start, Math.max(0, text.length - FINGERPRINT + 1));
        }

        int matches(int[] lo, int[] hi) {
            int n = 0;
            for (int first = 0; first < 256; first++) {
                if ((lo[0] >>> (first & 15) & 1) == 0 || (hi[0] >>> (first >>> 4) & 1) == 0) {
                    continue;
                }
                for (int k = start[first]; k < start[first + 1]; k++) {
                    int w = windows[k];
                    boolean all = true;
                    for (int p = 1; p < FINGERPRINT && all; p++) {
                        int b = w >>> (8 * p) & 0xff;
                        all = (lo[p] >>> (b & 15) & 1) != 0 && (hi[p] >>> (b >>> 4) & 1) != 0;
                    }
                    if (all) {
                        n += counts[k];
                    }
                }
            }
            return n;
        }
    }

    /** Estimated frequency of each byte value in prompts: prose, code, logs. */
    private static final double[] BYTE_FREQUENCY = new double[256];

    static {
        String letters = "etaoinshrdlcumwfgypbvkjxqz";
        for (int b = 0; b < 256; b++) {
            int lower = b >= 'A' && b <= 'Z' ? b + 32 : b;
            double f;
            int i = letters.indexOf(lower);
            if (i >= 0) {
                f = 0.045 * Math.pow(0.86, i) * (lower == b ? 1 : 0.2);
            } else if (b == ' ') {
                f = 0.12;
            } else if (b >= '0' && b <= '9') {
                f = 0.005;
            } else if (b == '\n' || b == '_' || b == '.' || b == '(' || b == ')' || b == '"' || b == ',') {
                f = 0.01;
            } else if (b < 128) {
                f = 0.002;
            } else {
                f = 0.0005;
            }
            BYTE_FREQUENCY[b] = f;
        }
    }
}
