package dev.sluice.rules.redact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Matcher;

/**
 * Scans one message body as it streams and, for {@link RedactionAction#REDACT}, rewrites it: each secret
 * becomes {@code [REDACTED:<detector-id>]}. Single-threaded: one instance per message, created by
 * {@link DetectorSet#newRedactor}. Pure Java; the proxy feeds it the bytes of each body chunk (after
 * content decoding, see {@link BodyDecoding}) and sends on what it returns.
 *
 * <h2>Use</h2>
 * <pre>{@code
 * StreamingRedactor r = detectors.newRedactor(BodyFormat.forContentType(ct), action, maxInspectedBody);
 * for (chunk : body) { send(r.feed(chunk)); if (r.blocked()) { answer 403 credential_detected; abort; } }
 * send(r.finish());
 * audit(r.findings());   // detector id -> count, never the secret
 * }</pre>
 * The total output length is not known before {@link #finish()}: send the rewritten body chunked, or
 * buffer it and recompute {@code Content-Length}.
 *
 * <h2>How it scans</h2>
 * Bytes are (for {@link BodyFormat#JSON}) decoded: the content of JSON strings is unescaped, so a secret
 * written as {@code sk-ant-api03&#92;u002d...} or a PEM key with {@code \n} escapes is seen as it is. The
 * decoded bytes pass once through the {@link KeywordPrefilter}; each keyword occurrence of a detector
 * becomes a pending hit, and the detector's pattern runs only on the region around it (starting at the
 * keyword, or at most {@link Detector#maxCharsBeforeKeyword()} before it, and at most
 * {@link Detector#maxLength()} long), once that region has fully arrived. No pattern ever scans text
 * without one of its keywords.
 *
 * <h2>Carry-over window and memory</h2>
 * Bytes are released only when no match can still cover them: the last
 * {@link DetectorSet#holdbackBytes()} decoded bytes (longest keyword + furthest look-back + 16, about
 * 300 bytes for the built-ins) are always held back, and while a hit is pending everything from its
 * region start is held back — at most {@link DetectorSet#maxMatchLength()} + the look-back (13,200
 * bytes for a PEM key, the longest built-in). A credential split across chunks at any offset is
 * therefore found. Input is processed in slices of at most 32 KiB, so the retained state is bounded for
 * any body size: about 2 × (window + slice) bytes of buffers in plain mode; in JSON mode also the raw
 * bytes behind the window (up to 6 raw bytes per decoded byte for {@code &#92;uXXXX} escapes) and one small
 * anchor per escape or string quote in the window.
 *
 * <h2>Actions</h2>
 * <ul>
 *   <li>{@link RedactionAction#REDACT}: output is the body with secrets replaced. In JSON mode a
 *       replacement is made inside the JSON string that held the secret (its raw, escaped span is
 *       replaced, so the output stays valid JSON); a match that spans string boundaries keeps the JSON
 *       punctuation between the strings.</li>
 *   <li>{@link RedactionAction#BLOCK}: output as for REDACT until the first match; from then on
 *       {@link #blocked()} is true and nothing more is returned, so no byte of a secret is released. The
 *       caller answers 403 {@code credential_detected} (and aborts any upstream request already
 *       started), or buffers the output until {@link #finish()}.</li>
 *   <li>{@link RedactionAction#REPORT}: output is the input, unchanged and without delay; findings are
 *       counted.</li>
 * </ul>
 */
public final class StreamingRedactor {

    /** Bytes after a keyword's start that a {@link Precheck} may look at when run at the hit itself. */
    private static final int PRECHECK_LOOKAHEAD = 256;
    /** Largest number of input bytes processed in one step. */
    static final int SLICE_BYTES = 32 * 1024;
    private static final byte[] EMPTY = new byte[0];

    private final List<Detector> detectors;
    private final Detector[] detectorArray;
    private final KeywordPrefilter prefilter;
    private final RedactionAction action;
    private final long maxBodyBytes;
    private final boolean json;
    private final int holdback;
    private final byte[][] replacements;
    private final Matcher[] matchers;
    private final Latin1 view = new Latin1();
    private final KeywordPrefilter.HitSink sink = this::onHit;

    // raw input: raw[0] is absolute raw offset rawBase
    private byte[] raw = new byte[SLICE_BYTES + 1024];
    private int rawLen;
    private long rawBase;
    private long rawDecoded;
    // decoded text: the same array as raw in plain mode
    private byte[] dec;
    private int decLen;
    private long decBase;
    private long scanned;

    // JSON state and anchors (escapes and structural quotes), absolute offsets
    private boolean inString;
    private long[] aDec = new long[64];
    private long[] aRaw = new long[64];
    private int[] aDecLen = new int[64];
    private int[] aRawLen = new int[64];
    private byte[] aKind = new byte[64];
    private int aCount;
    private long mapDec0;
    private long mapRaw0;
    private boolean baseInString;
    private static final byte ESCAPE = 0;
    private static final byte QUOTE_OPEN = 1;
    private static final byte QUOTE_CLOSE = 2;

    // pending keyword hits
    private int[] hitDet = new int[16];
    private long[] hitStart = new long[16];
    private int hitCount;

    // found matches not yet released, sorted by start (decoded offsets)
    private long[] mStart = new long[8];
    private long[] mEnd = new long[8];
    private int[] mDet = new int[8];
    private int mCount;

    private long rawEmitted;
    private long decEmitted;
    private final long[] counts;
    private boolean blocked;
    private boolean finished;
    private boolean failed;
    private long bytesIn;
    private long bytesOut;

    private byte[] out = new byte[SLICE_BYTES + 1024];
    private int outLen;
    private boolean produce;

    StreamingRedactor(DetectorSet set, BodyFormat format, RedactionAction action, long maxBodyBytes) {
        Objects.requireNonNull(set, "set");
        Objects.requireNonNull(format, "format");
        this.action = Objects.requireNonNull(action, "action");
        if (maxBodyBytes < 0) {
            throw new IllegalArgumentException("maxBodyBytes: " + maxBodyBytes + " (expected: >= 0)");
        }
        this.detectors = set.detectors();
        this.detectorArray = detectors.toArray(new Detector[0]);
        this.prefilter = set.prefilter();
        this.maxBodyBytes = maxBodyBytes;
        this.json = format == BodyFormat.JSON;
        this.holdback = set.holdbackBytes();
        this.replacements = new byte[detectors.size()][];
        for (int i = 0; i < detectors.size(); i++) {
            replacements[i] = ("[REDACTED:" + detectors.get(i).id() + "]").getBytes(StandardCharsets.US_ASCII);
        }
        this.matchers = new Matcher[detectors.size()];
        this.counts = new long[detectors.size()];
        this.dec = json ? new byte[SLICE_BYTES + 1024] : raw;
    }

    /**
     * Scans {@code chunk[off, off + len)} and returns the bytes that may be sent now (possibly none; for
     * REPORT the same bytes). The returned array is new, or {@code chunk} itself for REPORT when the
     * whole array was given.
     *
     * @throws BodyTooLargeException when the bytes fed so far exceed the limit; the redactor is then
     *                               unusable and the caller answers 413
     * @throws IllegalStateException after {@link #finish()} or a failure
     */
    public byte[] feed(byte[] chunk, int off, int len) throws BodyTooLargeException {
        Objects.checkFromIndexSize(off, len, chunk.length);
        admit(len);
        int start = outLen = 0;
        produce = action != RedactionAction.REPORT;
        for (int p = off; p < off + len; ) {
            int n = Math.min(SLICE_BYTES, off + len - p);
            ensureRaw(n);
            System.arraycopy(chunk, p, raw, rawLen, n);
            rawLen += n;
            p += n;
            step(false);
        }
        if (action == RedactionAction.REPORT) {
            bytesOut += len;
            return off == 0 && len == chunk.length ? chunk : Arrays.copyOfRange(chunk, off, off + len);
        }
        return takeOutput(start);
    }

    /** Same as {@link #feed(byte[], int, int)} for the whole array. */
    public byte[] feed(byte[] chunk) throws BodyTooLargeException {
        return feed(chunk, 0, chunk.length);
    }

    /**
     * Same as {@link #feed(byte[], int, int)} for the remaining bytes of {@code chunk}, which are
     * consumed (its position moves to its limit).
     */
    public byte[] feed(ByteBuffer chunk) throws BodyTooLargeException {
        int len = chunk.remaining();
        admit(len);
        byte[] copy = action == RedactionAction.REPORT ? new byte[len] : null;
        if (copy != null) {
            chunk.duplicate().get(copy);
        }
        outLen = 0;
        produce = action != RedactionAction.REPORT;
        while (chunk.hasRemaining()) {
            int n = Math.min(SLICE_BYTES, chunk.remaining());
            ensureRaw(n);
            chunk.get(raw, rawLen, n);
            rawLen += n;
            step(false);
        }
        if (copy != null) {
            bytesOut += len;
            return copy;
        }
        return takeOutput(0);
    }

    /**
     * Ends the body: scans what was held back and returns the last bytes to send. Idempotent: later calls
     * return nothing.
     */
    public byte[] finish() {
        if (finished || failed) {
            return EMPTY;
        }
        finished = true;
        outLen = 0;
        produce = action != RedactionAction.REPORT;
        step(true);
        return action == RedactionAction.REPORT ? EMPTY : takeOutput(0);
    }

    /** Answers whether a BLOCK-mode redactor has seen a credential (the caller answers 403). */
    public boolean blocked() {
        return blocked;
    }

    /** Answers whether any detector has matched so far. */
    public boolean hasFindings() {
        if (mCount > 0) {
            return true;
        }
        for (long c : counts) {
            if (c > 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Returns detector id → number of matches so far (matches still held back included), sorted by id.
     * Never contains a secret; safe for audit records and metrics.
     */
    public Map<String, Long> findings() {
        TreeMap<String, Long> m = new TreeMap<>();
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] > 0) {
                m.put(detectors.get(i).id(), counts[i]);
            }
        }
        for (int i = 0; i < mCount; i++) {
            m.merge(detectors.get(mDet[i]).id(), 1L, Long::sum);
        }
        return Collections.unmodifiableMap(m);
    }

    /** Returns the number of body bytes fed. */
    public long bytesIn() {
        return bytesIn;
    }

    /** Returns the number of bytes returned so far. */
    public long bytesOut() {
        return bytesOut;
    }

    /** Returns the bytes of buffers this redactor holds (capacity, not content): its memory bound at work. */
    public long retainedBytes() {
        long n = raw.length + out.length + (json ? dec.length : 0);
        n += aDec.length * 25L + hitDet.length * 12L + mStart.length * 20L;
        return n;
    }

    // ------------------------------------------------------------------ pipeline

    private void admit(int len) throws BodyTooLargeException {
        if (finished || failed) {
            throw new IllegalStateException("feed after " + (failed ? "failure" : "finish"));
        }
        if (bytesIn + len > maxBodyBytes) {
            failed = true;
            throw new BodyTooLargeException(maxBodyBytes);
        }
        bytesIn += len;
    }

    private void step(boolean finishing) {
        if (json) {
            decodeJson(finishing);
        } else {
            dec = raw;
            decBase = rawBase;
            decLen = rawLen;
            rawDecoded = rawBase + rawLen;
        }
        // keyword starts are scanned up to where the longest keyword still fits in the decoded text; the
        // rest waits for the next step (or the end of the body)
        int from = (int) (scanned - decBase);
        int to = finishing ? decLen : Math.max(from, decLen - (prefilter.maxKeywordLength() - 1));
        prefilter.scan(dec, from, to, decLen, sink);
        scanned = decBase + to;
        if (hitCount > 0) {
            resolve(finishing);
        }
        emit(finishing);
        compact();
    }

    private void onHit(int keyword, int endExclusive) {
        int start = endExclusive - prefilter.keywordLength(keyword);
        boolean wordStart = start == 0 || !isAlnum(dec[start - 1]);
        for (int d : prefilter.detectorsOf(keyword)) {
            Detector det = detectorArray[d];
            if (!wordStart && det.keywordAtWordStart()) {
                continue;
            }
            // run the precheck now when its look-ahead has arrived: most hits of common keywords end here
            Precheck pre = det.precheck();
            if (pre != null && start + PRECHECK_LOOKAHEAD <= decLen && !pre.mayMatch(dec, start, decLen)) {
                continue;
            }
            if (hitCount == hitDet.length) {
                hitDet = Arrays.copyOf(hitDet, hitCount * 2);
                hitStart = Arrays.copyOf(hitStart, hitCount * 2);
            }
            hitDet[hitCount] = d;
            hitStart[hitCount] = decBase + start;
            hitCount++;
        }
    }

    private static boolean isAlnum(byte b) {
        return (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z');
    }

    private void resolve(boolean finishing) {
        long avail = decBase + decLen;
        view.set(dec, decLen);
        int w = 0;
        for (int h = 0; h < hitCount; h++) {
            int d = hitDet[h];
            long ks = hitStart[h];
            Detector det = detectorArray[d];
            long regionEnd = ks + det.maxLength();
            if (!finishing && regionEnd + 1 > avail) {
                hitDet[w] = d;
                hitStart[w] = ks;
                w++;
                continue;
            }
            if (regionEnd > avail) {
                regionEnd = avail;
            }
            if (covered(d, ks)) {
                continue;
            }
            if (det.precheck() != null && !det.precheck().mayMatch(dec, (int) (ks - decBase), decLen)) {
                continue;
            }
            long regionStart = Math.max(ks - det.maxCharsBeforeKeyword(), decBase);
            Matcher m = matcher(d);
            m.region((int) (regionStart - decBase), (int) (regionEnd - decBase));
            if (det.maxCharsBeforeKeyword() == 0) {
                if (m.lookingAt()) {
                    accept(d, det, m);
                }
            } else {
                while (m.find()) {
                    accept(d, det, m);
                }
            }
        }
        hitCount = w;
    }

    private Matcher matcher(int d) {
        Matcher m = matchers[d];
        if (m == null) {
            m = detectors.get(d).pattern().matcher(view);
            m.useTransparentBounds(true);
            m.useAnchoringBounds(false);
            matchers[d] = m;
        }
        return m;
    }

    private boolean covered(int d, long pos) {
        for (int i = 0; i < mCount; i++) {
            if (mDet[i] == d && mStart[i] <= pos && pos < mEnd[i]) {
                return true;
            }
        }
        return false;
    }

    private void accept(int d, Detector det, Matcher m) {
        int g = det.secretGroup();
        int s = m.start(g);
        int e = m.end(g);
        if (s < 0 || e <= s) {
            return;
        }
        if (!det.accepts(new String(dec, s, e - s, StandardCharsets.ISO_8859_1))) {
            return;
        }
        addMatch(decBase + s, decBase + e, d);
    }

    private void addMatch(long s, long e, int d) {
        if (e <= decEmitted) {
            return;
        }
        if (s < decEmitted) {
            s = decEmitted;
        }
        int i = 0;
        while (i < mCount && mEnd[i] <= s) {
            i++;
        }
        // merge every pending match overlapping [s, e)
        int j = i;
        while (j < mCount && mStart[j] < e) {
            s = Math.min(s, mStart[j]);
            e = Math.max(e, mEnd[j]);
            d = Math.min(d, mDet[j]);
            j++;
        }
        int removed = j - i;
        if (removed == 0) {
            if (mCount == mStart.length) {
                mStart = Arrays.copyOf(mStart, mCount * 2);
                mEnd = Arrays.copyOf(mEnd, mCount * 2);
                mDet = Arrays.copyOf(mDet, mCount * 2);
            }
            System.arraycopy(mStart, i, mStart, i + 1, mCount - i);
            System.arraycopy(mEnd, i, mEnd, i + 1, mCount - i);
            System.arraycopy(mDet, i, mDet, i + 1, mCount - i);
            mCount++;
        } else if (removed > 1) {
            System.arraycopy(mStart, j, mStart, i + 1, mCount - j);
            System.arraycopy(mEnd, j, mEnd, i + 1, mCount - j);
            System.arraycopy(mDet, j, mDet, i + 1, mCount - j);
            mCount -= removed - 1;
        }
        mStart[i] = s;
        mEnd[i] = e;
        mDet[i] = d;
        if (action == RedactionAction.BLOCK) {
            blocked = true;
        }
    }

    private void emit(boolean finishing) {
        long end = decBase + decLen;
        long limit;
        if (finishing) {
            limit = end;
        } else {
            limit = end - holdback;
            for (int h = 0; h < hitCount; h++) {
                limit = Math.min(limit, hitStart[h] - detectors.get(hitDet[h]).maxCharsBeforeKeyword());
            }
        }
        if (limit <= decEmitted && mCount == 0) {
            return;
        }
        boolean write = produce && !blocked;
        while (mCount > 0 && mStart[0] < limit) {
            long ms = mStart[0];
            long me = mEnd[0];
            int d = mDet[0];
            copyRaw(rawStartOf(ms), write);
            writeReplacement(ms, me, d, write);
            decEmitted = me;
            counts[d]++;
            mCount--;
            System.arraycopy(mStart, 1, mStart, 0, mCount);
            System.arraycopy(mEnd, 1, mEnd, 0, mCount);
            System.arraycopy(mDet, 1, mDet, 0, mCount);
        }
        if (decEmitted < limit) {
            copyRaw(finishing ? rawDecoded : rawStartOf(limit), write);
            decEmitted = limit;
        }
    }

    /** Copies raw bytes from {@link #rawEmitted} up to {@code to} into the output. */
    private void copyRaw(long to, boolean write) {
        if (to <= rawEmitted) {
            return;
        }
        if (write) {
            int from = (int) (rawEmitted - rawBase);
            int n = (int) (to - rawEmitted);
            ensureOut(n);
            System.arraycopy(raw, from, out, outLen, n);
            outLen += n;
        }
        rawEmitted = to;
    }

    private void writeBytes(byte[] b, boolean write) {
        if (write) {
            ensureOut(b.length);
            System.arraycopy(b, 0, out, outLen, b.length);
            outLen += b.length;
        }
    }

    private void writeReplacement(long ms, long me, int d, boolean write) {
        long rawEnd = rawEndOf(me);
        if (!json) {
            writeBytes(replacements[d], write);
            rawEmitted = Math.max(rawEmitted, rawEnd);
            return;
        }
        // split at structural quotes: pieces inside strings are replaced, JSON punctuation between
        // strings is kept
        long pos = ms;
        int a = firstAnchorAtOrAfter(ms);
        for (; a < aCount && aDec[a] < me; a++) {
            if (aKind[a] == ESCAPE) {
                continue;
            }
            writePiece(pos, aDec[a], d, write);
            copyRaw(aRaw[a] + 1, write); // the quote itself (raw position never before rawEmitted here)
            pos = aDec[a] + 1;
        }
        writePiece(pos, me, d, write);
        rawEmitted = Math.max(rawEmitted, rawEnd);
    }

    private void writePiece(long ps, long pe, int d, boolean write) {
        if (ps >= pe) {
            return;
        }
        long rs = Math.max(rawStartOf(ps), rawEmitted);
        long re = rawEndOf(pe);
        if (re <= rs) {
            return;
        }
        if (inStringAt(ps) || !structuralOnly(rs, re)) {
            copyRaw(rs, write);
            writeBytes(replacements[d], write);
        } else {
            copyRaw(re, write);
        }
        rawEmitted = Math.max(rawEmitted, re);
    }

    /** Answers whether raw bytes are only JSON punctuation, whitespace, number or literal characters. */
    private boolean structuralOnly(long rs, long re) {
        for (long p = rs; p < re; p++) {
            byte b = raw[(int) (p - rawBase)];
            if ("{}[],: \t\r\n0123456789.eE+-truefalsn".indexOf(b) < 0) {
                return false;
            }
        }
        return true;
    }

    private byte[] takeOutput(int start) {
        if (outLen == start) {
            return EMPTY;
        }
        byte[] r = Arrays.copyOfRange(out, start, outLen);
        bytesOut += r.length;
        outLen = 0;
        return r;
    }

    // ------------------------------------------------------------------ offsets (JSON anchors)

    /** Index of the last anchor with aDec <= d, or -1. */
    private int lastAnchorAtOrBefore(long d) {
        int lo = 0;
        int hi = aCount - 1;
        int r = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (aDec[mid] <= d) {
                r = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return r;
    }

    private int firstAnchorAtOrAfter(long d) {
        int i = lastAnchorAtOrBefore(d);
        return i >= 0 && aDec[i] == d ? i : i + 1;
    }

    /** Raw offset where decoded byte {@code d} begins (the start of its escape when inside one). */
    private long rawStartOf(long d) {
        if (!json) {
            return d;
        }
        int i = lastAnchorAtOrBefore(d);
        if (i < 0) {
            return mapRaw0 + (d - mapDec0);
        }
        long anchorEnd = aDec[i] + aDecLen[i];
        if (d < anchorEnd) {
            return aRaw[i];
        }
        return aRaw[i] + aRawLen[i] + (d - anchorEnd);
    }

    /** Raw offset just after decoded byte {@code d - 1} (the end of its escape when inside one). */
    private long rawEndOf(long d) {
        if (!json) {
            return d;
        }
        long last = d - 1;
        int i = lastAnchorAtOrBefore(last);
        if (i < 0) {
            return mapRaw0 + (d - mapDec0);
        }
        long anchorEnd = aDec[i] + aDecLen[i];
        if (last < anchorEnd) {
            return aRaw[i] + aRawLen[i];
        }
        return aRaw[i] + aRawLen[i] + (d - anchorEnd);
    }

    /** Answers whether decoded byte {@code d} is inside a JSON string (a structural quote is not). */
    private boolean inStringAt(long d) {
        int i = lastAnchorAtOrBefore(d);
        if (i < 0) {
            return baseInString;
        }
        if (aKind[i] == ESCAPE) {
            return true;
        }
        if (aDec[i] == d) {
            return false;
        }
        return aKind[i] == QUOTE_OPEN;
    }

    private void addAnchor(long d, long r, int dl, int rl, byte kind) {
        if (aCount == aDec.length) {
            int n = aCount * 2;
            aDec = Arrays.copyOf(aDec, n);
            aRaw = Arrays.copyOf(aRaw, n);
            aDecLen = Arrays.copyOf(aDecLen, n);
            aRawLen = Arrays.copyOf(aRawLen, n);
            aKind = Arrays.copyOf(aKind, n);
        }
        aDec[aCount] = d;
        aRaw[aCount] = r;
        aDecLen[aCount] = dl;
        aRawLen[aCount] = rl;
        aKind[aCount] = kind;
        aCount++;
    }

    // ------------------------------------------------------------------ JSON decoding

    private void decodeJson(boolean finishing) {
        int i = (int) (rawDecoded - rawBase);
        final byte[] r = raw;
        final int n = rawLen;
        ensureDec(n - i + 8);
        while (i < n) {
            if (!inString) {
                i = copyUntil(r, i, n, false);
                if (i < n) {
                    addAnchor(decBase + decLen, rawBase + i, 1, 1, QUOTE_OPEN);
                    dec[decLen++] = '"';
                    inString = true;
                    i++;
                }
            } else {
                i = copyUntil(r, i, n, true);
                if (i >= n) {
                    break;
                }
                if (r[i] == '"') {
                    addAnchor(decBase + decLen, rawBase + i, 1, 1, QUOTE_CLOSE);
                    dec[decLen++] = '"';
                    inString = false;
                    i++;
                } else {
                    int used = decodeEscape(i, finishing);
                    if (used == 0) {
                        break;
                    }
                    i += used;
                }
            }
        }
        rawDecoded = rawBase + i;
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;
    private static final long QUOTES = 0x2222222222222222L;
    private static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;

    /**
     * Copies {@code r[from, to)} to the decoded text up to the first {@code "} (or, with
     * {@code backslash}, the first {@code "} or {@code \}) and returns its index, or {@code to}. Eight
     * bytes at a time, copied and tested in one pass (the copy may write up to eight bytes past the new
     * end of the decoded text, which {@link #ensureDec} leaves room for; they are overwritten later): a
     * byte equal to the searched one becomes zero after XOR, and the lowest zero byte of a word is found
     * exactly by {@code (x - 0x01..) & ~x & 0x80..} (higher bytes may be flagged falsely, never lower ones).
     */
    private int copyUntil(byte[] r, int from, int to, boolean backslash) {
        final byte[] d = dec;
        int o = decLen;
        int j = from;
        for (; j + 8 <= to; j += 8, o += 8) {
            long w = (long) LONGS.get(r, j);
            LONGS.set(d, o, w);
            long q = w ^ QUOTES;
            long t = (q - ONES) & ~q;
            if (backslash) {
                long b = w ^ BACKSLASHES;
                t |= (b - ONES) & ~b;
            }
            t &= HIGHS;
            if (t != 0) {
                int k = Long.numberOfTrailingZeros(t) >>> 3;
                decLen = o + k;
                return j + k;
            }
        }
        for (; j < to; j++, o++) {
            byte b = r[j];
            if (b == '"' || (backslash && b == '\\')) {
                break;
            }
            d[o] = b;
        }
        decLen = o;
        return j;
    }

    /** Decodes the escape at raw index {@code i}; returns raw bytes consumed, 0 to wait for more input. */
    private int decodeEscape(int i, boolean finishing) {
        int avail = rawLen - i;
        if (avail < 2) {
            return finishing ? literalBackslash() : 0;
        }
        byte c = raw[i + 1];
        int v;
        switch (c) {
            case '"': v = '"'; break;
            case '\\': v = '\\'; break;
            case '/': v = '/'; break;
            case 'b': v = 8; break;
            case 'f': v = 12; break;
            case 'n': v = 10; break;
            case 'r': v = 13; break;
            case 't': v = 9; break;
            case 'u': v = -1; break;
            default: return literalBackslash();
        }
        long d = decBase + decLen;
        long r = rawBase + i;
        if (v >= 0) {
            addAnchor(d, r, 1, 2, ESCAPE);
            dec[decLen++] = (byte) v;
            return 2;
        }
        if (avail < 6) {
            return finishing ? literalBackslash() : 0;
        }
        int cu = hex4(i + 2);
        if (cu < 0) {
            return literalBackslash();
        }
        int cp = cu;
        int rawUsed = 6;
        if (cu >= 0xD800 && cu <= 0xDBFF) {
            if (avail < 12 && !finishing) {
                return 0;
            }
            int lo = avail >= 12 && raw[i + 6] == '\\' && raw[i + 7] == 'u' ? hex4(i + 8) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cu - 0xD800) << 10) + (lo - 0xDC00);
                rawUsed = 12;
            } else {
                cp = 0xFFFD;
            }
        } else if (cu >= 0xDC00 && cu <= 0xDFFF) {
            cp = 0xFFFD;
        }
        int start = decLen;
        if (cp < 0x80) {
            dec[decLen++] = (byte) cp;
        } else if (cp < 0x800) {
            dec[decLen++] = (byte) (0xC0 | (cp >> 6));
            dec[decLen++] = (byte) (0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            dec[decLen++] = (byte) (0xE0 | (cp >> 12));
            dec[decLen++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
            dec[decLen++] = (byte) (0x80 | (cp & 0x3F));
        } else {
            dec[decLen++] = (byte) (0xF0 | (cp >> 18));
            dec[decLen++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
            dec[decLen++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
            dec[decLen++] = (byte) (0x80 | (cp & 0x3F));
        }
        addAnchor(d, r, decLen - start, rawUsed, ESCAPE);
        return rawUsed;
    }

    private int literalBackslash() {
        dec[decLen++] = '\\';
        return 1;
    }

    private int hex4(int at) {
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int c = raw[at + k];
            int h;
            if (c >= '0' && c <= '9') {
                h = c - '0';
            } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
                h = (c | 0x20) - 'a' + 10;
            } else {
                return -1;
            }
            v = (v << 4) | h;
        }
        return v;
    }

    // ------------------------------------------------------------------ buffers

    private void compact() {
        long keepDec = decEmitted;
        for (int h = 0; h < hitCount; h++) {
            keepDec = Math.min(keepDec, hitStart[h] - detectors.get(hitDet[h]).maxCharsBeforeKeyword());
        }
        keepDec = Math.max(decBase, keepDec - DetectorSet.CONTEXT_BYTES);
        if (!json) {
            long keep = Math.min(keepDec, rawEmitted);
            int drop = (int) (keep - rawBase);
            if (drop > 0) {
                System.arraycopy(raw, drop, raw, 0, rawLen - drop);
                rawLen -= drop;
                rawBase = keep;
                dec = raw;
                decBase = rawBase;
                decLen = rawLen;
            }
            return;
        }
        long keepRaw = Math.min(rawEmitted, rawStartOf(keepDec));
        int dropRaw = (int) (keepRaw - rawBase);
        if (dropRaw > 0) {
            System.arraycopy(raw, dropRaw, raw, 0, rawLen - dropRaw);
            rawLen -= dropRaw;
            rawBase = keepRaw;
        }
        int dropDec = (int) (keepDec - decBase);
        if (dropDec > 0) {
            System.arraycopy(dec, dropDec, dec, 0, decLen - dropDec);
            decLen -= dropDec;
            decBase = keepDec;
        }
        int k = 0;
        while (k < aCount && aDec[k] + aDecLen[k] <= keepDec && aRaw[k] + aRawLen[k] <= keepRaw) {
            k++;
        }
        if (k > 0) {
            int last = k - 1;
            mapDec0 = aDec[last] + aDecLen[last];
            mapRaw0 = aRaw[last] + aRawLen[last];
            baseInString = aKind[last] != QUOTE_CLOSE;
            System.arraycopy(aDec, k, aDec, 0, aCount - k);
            System.arraycopy(aRaw, k, aRaw, 0, aCount - k);
            System.arraycopy(aDecLen, k, aDecLen, 0, aCount - k);
            System.arraycopy(aRawLen, k, aRawLen, 0, aCount - k);
            System.arraycopy(aKind, k, aKind, 0, aCount - k);
            aCount -= k;
        }
    }

    private void ensureRaw(int more) {
        if (rawLen + more > raw.length) {
            raw = Arrays.copyOf(raw, Math.max(raw.length * 2, rawLen + more));
            if (!json) {
                dec = raw;
            }
        }
    }

    private void ensureDec(int more) {
        // an escape never decodes to more bytes than it has (at most 4 for 6 or 12 raw bytes); callers add
        // 8 bytes of room for copyUntil's last word
        if (decLen + more > dec.length) {
            dec = Arrays.copyOf(dec, Math.max(dec.length * 2, decLen + more));
        }
    }

    private void ensureOut(int more) {
        if (outLen + more > out.length) {
            out = Arrays.copyOf(out, Math.max(out.length * 2, outLen + more));
        }
    }

    /** A char view of bytes (ISO-8859-1: one char per byte) for java.util.regex. */
    private static final class Latin1 implements CharSequence {
        private byte[] a = EMPTY;
        private int len;

        void set(byte[] a, int len) {
            this.a = a;
            this.len = len;
        }

        @Override
        public int length() {
            return len;
        }

        @Override
        public char charAt(int index) {
            if (index >= len) {
                throw new IndexOutOfBoundsException(index);
            }
            return (char) (a[index] & 0xff);
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new String(a, start, end - start, StandardCharsets.ISO_8859_1);
        }

        @Override
        public String toString() {
            return new String(a, 0, len, StandardCharsets.ISO_8859_1);
        }
    }
}
