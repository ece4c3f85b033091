package dev.sluice.rules.redact;

import java.nio.ByteBuffer;
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
 * The bytes pass once through the {@link KeywordPrefilter}; each keyword occurrence of a detector
 * becomes a pending hit, and the detector's pattern runs only on the region around it (starting at the
 * keyword, or at most {@link Detector#maxCharsBeforeKeyword()} characters before it, and at most
 * {@link Detector#maxLength()} characters long), once that region has fully arrived. No pattern ever
 * scans text without one of its keywords.
 *
 * <p>For {@link BodyFormat#JSON}, patterns and prechecks see <em>decoded</em> text: JSON escapes are
 * undone, so a secret written as {@code sk-ant-api03&#92;u002d...} or a PEM key with {@code \n} escapes
 * is seen as it is. The body is not decoded as a whole, which would cost more than the scan itself:
 * <ul>
 *   <li>the keyword scan runs on the raw bytes. Keywords never contain a quote, a backslash or a control
 *       character, so a keyword occurrence in the decoded text is either written literally in the raw
 *       bytes or contains a character written as {@code &#92;u00XX} or {@code \/}. Those two escapes are
 *       scanned for too (as {@link #JSON_ESCAPE_TRIGGERS}); around them a small window is decoded and
 *       scanned for keywords that contain an escaped character. Runs of such escapes are decoded as one
 *       window;</li>
 *   <li>each hit's region is decoded into a small window, with the raw offsets of every decoded byte,
 *       and the pattern runs there; a match is mapped back to the raw bytes it came from (whole escapes);
 *   <li>a precheck at a raw hit runs on the raw bytes up to the first backslash (where raw and decoded
 *       text are the same), and again on the decoded window before the pattern.</li>
 * </ul>
 * Every backslash is read as the start of an escape, inside strings or not (valid JSON has none outside
 * strings); an escape that JSON does not define is kept as a literal backslash.
 *
 * <h2>Carry-over window and memory</h2>
 * Bytes are released only when no match can still cover them: the last raw bytes are always held back —
 * for plain text the longest keyword plus the furthest look-back plus 16 ({@link DetectorSet#holdbackBytes()},
 * about 300 bytes for the built-ins); for JSON up to {@value #JSON_EXPANSION} raw bytes per decoded
 * character (an {@code &#92;uXXXX} escape), about 7 × (longest keyword) + 6 × look-back + 28. While a hit
 * is pending everything from its region start is held back too — at most
 * {@link DetectorSet#maxMatchLength()} characters + the look-back (13,200 for a PEM key, the longest
 * built-in), times {@value #JSON_EXPANSION} raw bytes per character in JSON. A credential split across
 * chunks at any offset is therefore found. A detector that looks back only within a base64 run
 * ({@link EncodedDetectors#BASE64_TEXT}) adds nothing to that holdback; instead a run of base64 characters
 * that straddles the release point is kept whole while it is at most its look-back long (in JSON, raw
 * bytes up to {@value #JSON_EXPANSION} times the look-back, which counts decoded characters). Input is
 * processed in slices of at most 32 KiB, so the
 * retained state is bounded for any body size.
 *
 * <h2>Actions</h2>
 * <ul>
 *   <li>{@link RedactionAction#REDACT}: output is the body with secrets replaced. In JSON mode a
 *       replacement is made inside the JSON string that held the secret (its raw, escaped span is
 *       replaced, so the output stays valid JSON); a match that spans string boundaries keeps its
 *       unescaped quotes and the pieces between them made only of JSON punctuation and whitespace
 *       ({@code , : [ ] { }}), which is what separates strings; every other piece is replaced.</li>
 *   <li>{@link RedactionAction#BLOCK}: output as for REDACT until the first match; from then on
 *       {@link #blocked()} is true and nothing more is returned, so no byte of a secret is released. The
 *       caller answers 403 {@code credential_detected} (and aborts any upstream request already
 *       started), or buffers the output until {@link #finish()}.</li>
 *   <li>{@link RedactionAction#REPORT}: output is the input, unchanged and without delay; findings are
 *       counted.</li>
 * </ul>
 */
public final class StreamingRedactor {

    /**
     * Extra keywords the {@link KeywordPrefilter} of a {@link DetectorSet} reports after the detectors'
     * own: the JSON escapes that can stand for a keyword character, which is printable ASCII:
     * {@code &#92;u00XX} and {@code \/} (escapes of other characters, such as a whole text in a
     * non-Latin script sent with {@code ensure_ascii}, cannot).
     */
    static final List<String> JSON_ESCAPE_TRIGGERS = List.of("\\u00", "\\/");
    /** Most raw bytes of JSON per decoded byte: {@code &#92;uXXXX} decoding to one byte. */
    static final int JSON_EXPANSION = 6;
    /** Bytes after a keyword's start that a {@link Precheck} may look at when run at the hit itself. */
    private static final int PRECHECK_LOOKAHEAD = 256;
    /** Largest number of input bytes processed in one step. */
    static final int SLICE_BYTES = 32 * 1024;
    /** Largest raw span decoded at once around a run of escape triggers. */
    private static final int TRIGGER_WINDOW_BYTES = 16 * 1024;
    private static final byte[] EMPTY = new byte[0];

    private final DetectorSet set;
    /** Decoding level: 0 for a body, see {@link EncodedDetectors#MAX_DEPTH}. */
    private final int depth;
    private final List<Detector> detectors;
    private final Detector[] detectorArray;
    /** Per keyword: a two-byte escape keyword ({@code \x}) of a decoding detector. */
    private final boolean[] keywordBackslash;
    private final KeywordPrefilter prefilter;
    /** Keyword indexes at or above this are {@link #JSON_ESCAPE_TRIGGERS}. */
    private final int detectorKeywords;
    private final RedactionAction action;
    private final long maxBodyBytes;
    private final boolean json;
    /** Raw bytes per decoded byte at most: 1, or {@link #JSON_EXPANSION}. */
    private final int expansion;
    private final int maxKeyword;
    private final int maxBefore;
    /**
     * Raw bytes of a base64 run kept whole at the end of the released text (0: none), for detectors that
     * {@linkplain EncodedDetectors#looksBackInRun look back only within a run}.
     */
    private final int runLookBack;
    /** Raw bytes always held back at the end of the input. */
    private final int holdback;
    private final Matcher[] matchers;
    private final Precheck[] prechecks;
    private final boolean[] wordStartOnly;
    private final boolean[] keywordWordStartOnly;
    private final boolean[] keywordPrechecked;
    private final Latin1 view = new Latin1();
    private final KeywordPrefilter.HitSink sink = this::onHit;
    /** Per keyword: its tap keyword index, or -1 (see {@link DetectorSet#withTap}). */
    private final int[] tapOf;
    /** The tap keywords' reader, or null when no {@link KeywordTap} listens. */
    private final TapReader tap;

    // raw input: raw[0] is absolute offset rawBase
    private byte[] raw;
    private int rawLen;
    private long rawBase;
    /** Keyword starts before this absolute offset have been scanned. */
    private long scanned;
    /** JSON: whether raw[0] follows an escaping backslash (the run of backslashes before it was odd). */
    private boolean baseEscaped;

    // pending keyword hits: detector, absolute raw offset of the keyword
    private int[] hitDet = new int[16];
    private long[] hitStart = new long[16];
    private int hitCount;

    // JSON escape triggers not yet examined: absolute raw offset of the backslash, ascending
    private long[] triggers = new long[16];
    private int triggerCount;

    /** Found matches not yet released. */
    private final PendingMatches matches = new PendingMatches();

    /** JSON: the decoded window around a hit or a run of escape triggers, with its raw offsets. */
    private final JsonWindow jsonWindow = new JsonWindow();

    private final long[] counts;
    private boolean blocked;
    private boolean finished;
    private boolean failed;
    private long bytesIn;

    /** Writes what is settled, with the replacements of accepted matches, and counts what was released. */
    private final Release release;
    private boolean produce;

    StreamingRedactor(DetectorSet set, BodyFormat format, RedactionAction action, long maxBodyBytes) {
        this(set, format, action, maxBodyBytes, 0);
    }

    /**
     * A redactor at decoding level {@code depth}: 0 for a body, 1 or more for the decoded bytes of an
     * encoded token (see {@link EncodedDetectors}), which start with small buffers.
     */
    StreamingRedactor(DetectorSet set, BodyFormat format, RedactionAction action, long maxBodyBytes, int depth) {
        this(set, format, action, maxBodyBytes, depth, null);
    }

    /** As above, reporting the set's tap keywords to {@code tap} (null for none). */
    StreamingRedactor(DetectorSet set, BodyFormat format, RedactionAction action, long maxBodyBytes, int depth,
                      KeywordTap tap) {
        Objects.requireNonNull(set, "set");
        this.set = set;
        this.depth = depth;
        // A small body (a header value, a request-target) needs no slice-sized buffers: both grow if a
        // body ever needs more, so they start at the body's bound when that is below a slice.
        int initial = depth > 0 ? 1024
                : maxBodyBytes < SLICE_BYTES ? (int) Math.max(0, maxBodyBytes) + 1024 : SLICE_BYTES + 1024;
        this.raw = new byte[initial];
        Objects.requireNonNull(format, "format");
        this.action = Objects.requireNonNull(action, "action");
        if (maxBodyBytes < 0) {
            throw new IllegalArgumentException("maxBodyBytes: " + maxBodyBytes + " (expected: >= 0)");
        }
        this.detectors = set.detectors();
        this.detectorArray = detectors.toArray(new Detector[0]);
        this.prefilter = set.prefilter();
        this.detectorKeywords = prefilter.keywords().size() - JSON_ESCAPE_TRIGGERS.size();
        this.maxBodyBytes = maxBodyBytes;
        this.json = format == BodyFormat.JSON;
        this.expansion = json ? JSON_EXPANSION : 1;
        // the escape triggers are scanned too: the longest of all the prefilter's keywords bounds the scan
        int kw = prefilter.maxKeywordLength();
        int before = 0;
        int runLookBack = 0;
        for (Detector d : detectors) {
            if (EncodedDetectors.looksBackInRun(d)) {
                runLookBack = Math.max(runLookBack, d.maxCharsBeforeKeyword());
            } else {
                before = Math.max(before, d.maxCharsBeforeKeyword());
            }
        }
        this.runLookBack = runLookBack;
        this.maxKeyword = kw;
        this.maxBefore = before;
        // JSON: a keyword found through an escape trigger starts up to 6 × (kw - 1) raw bytes before the
        // trigger, which itself may lie in the last kw - 1 bytes not yet scanned
        this.holdback = json ? 7 * kw + JSON_EXPANSION * (before + DetectorSet.CONTEXT_BYTES) + 12 : set.holdbackBytes();
        byte[][] replacements = new byte[detectors.size()][];
        for (int i = 0; i < detectors.size(); i++) {
            replacements[i] = ("[REDACTED:" + detectors.get(i).id() + "]").getBytes(StandardCharsets.US_ASCII);
        }
        this.release = new Release(new OutputBuffer(initial), replacements, json, prefilter);
        this.matchers = new Matcher[detectors.size()];
        this.counts = new long[detectors.size()];
        this.prechecks = set.prechecks;
        this.wordStartOnly = set.wordStartOnly;
        this.keywordWordStartOnly = set.keywordWordStartOnly;
        this.keywordPrechecked = set.keywordPrechecked;
        this.tapOf = set.tapOf;
        this.tap = tap != null && depth == 0 && !set.tap().isEmpty() ? new TapReader(this, set.tap(), tap, json) : null;
        this.keywordBackslash = new boolean[prefilter.keywords().size()];
        for (int k = 0; k < detectorKeywords; k++) {
            keywordBackslash[k] = prefilter.keywords().get(k).charAt(0) == '\\';
        }
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
        release.reset();
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
            release.passedThrough(len);
            return off == 0 && len == chunk.length ? chunk : Arrays.copyOfRange(chunk, off, off + len);
        }
        return release.take();
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
        release.reset();
        produce = action != RedactionAction.REPORT;
        while (chunk.hasRemaining()) {
            int n = Math.min(SLICE_BYTES, chunk.remaining());
            ensureRaw(n);
            chunk.get(raw, rawLen, n);
            rawLen += n;
            step(false);
        }
        if (copy != null) {
            release.passedThrough(len);
            return copy;
        }
        return release.take();
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
        release.reset();
        produce = action != RedactionAction.REPORT;
        step(true);
        return action == RedactionAction.REPORT ? EMPTY : release.take();
    }

    /**
     * Hands the {@link KeywordTap} now the text around every tap keyword fed so far, as if the body ended
     * here, without ending it: a hit whose text after it has not all arrived is read out with what there
     * is, and read out again once it has (a tap that must act at a chunk's end, such as a response's
     * red flag that closes the stream, calls this after feeding the chunk). The keyword starts the scan
     * leaves for the next input (the last bytes, where a longer keyword may still be arriving) are looked
     * at too. Detection, findings and release are unchanged. Nothing happens without a tap, or after
     * {@link #finish()} or a failure.
     */
    public void settleTap() {
        if (tap == null || finished || failed) {
            return;
        }
        tap.beginSettle();
        int from = (int) (scanned - rawBase);
        if (from < rawLen) {
            prefilter.scan(raw, from, rawLen, rawLen, (k, end) -> {
                if (tapOf[k] >= 0) {
                    tapHit(k, end - prefilter.keywordLength(k));
                }
            });
        }
        tap.endSettle(raw, rawLen, rawBase);
    }

    /** Answers whether a BLOCK-mode redactor has seen a credential (the caller answers 403). */
    public boolean blocked() {
        return blocked;
    }

    /** Answers whether any detector has matched so far. */
    public boolean hasFindings() {
        if (matches.count() > 0) {
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
        for (int i = 0; i < matches.count(); i++) {
            m.merge(detectors.get(matches.detector(i)).id(), 1L, Long::sum);
        }
        return Collections.unmodifiableMap(m);
    }

    /** Returns the number of body bytes fed. */
    public long bytesIn() {
        return bytesIn;
    }

    /** Returns the number of bytes returned so far. */
    public long bytesOut() {
        return release.bytesOut();
    }

    /** Returns the bytes of buffers this redactor holds (capacity, not content): its memory bound at work. */
    public long retainedBytes() {
        long n = raw.length + release.capacity() + jsonWindow.retainedBytes();
        n += hitDet.length * 12L + triggers.length * 8L + matches.retainedBytes();
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
        // keyword starts are scanned up to where the longest keyword still fits in the input; the rest
        // waits for the next step (or the end of the body)
        int from = (int) (scanned - rawBase);
        int to = finishing ? rawLen : Math.max(from, rawLen - prefilter.lookAhead());
        prefilter.scan(raw, from, to, rawLen, sink);
        scanned = rawBase + to;
        if (triggerCount > 0) {
            examineTriggers(finishing);
        }
        if (tap != null) {
            tap.resolve(raw, rawLen, rawBase, finishing);
        }
        if (hitCount > 0) {
            resolve(finishing);
        }
        emit(finishing);
        compact();
    }

    /** A keyword (or, in JSON, an escape trigger) in the raw bytes: {@code raw[end - length, end)}. */
    private void onHit(int keyword, int endExclusive) {
        int start = endExclusive - prefilter.keywordLength(keyword);
        if (tap != null && tapOf[keyword] >= 0) {
            tapHit(keyword, start);
            if (prefilter.detectorsOf(keyword).length == 0) {
                return;
            }
        }
        if (keyword >= detectorKeywords) {
            if (json) {
                addTrigger(rawBase + start);
            }
            return;
        }
        boolean decisive = start + PRECHECK_LOOKAHEAD <= rawLen;
        if (!json) {
            addHit(keyword, start, start == 0 ? ' ' : raw[start - 1], raw, start, rawLen, decisive, false);
            return;
        }
        if (keywordBackslash[keyword]) {
            if (start > 0 && raw[start - 1] == '\\' && escaped(start)) {
                // \\x: the decoded text has the escape keyword where the escaped backslash begins
                addHit(keyword, start - 1, ' ', raw, start - 1, start - 1, decisive, false);
                return;
            }
            if (raw[start + 1] == 'u') {
                return; // a JSON backslash-u escape: decoded, it is no backslash
            }
        }
        int wordBefore;
        if (start >= 8 && noBackslashInSixBefore(start)) {
            // no escape can reach the keyword's first byte or the byte before it: both are literal
            wordBefore = raw[start - 1];
        } else {
            if (escapeStart(start) != start) {
                return; // starts inside an escape: the decoded text has no keyword here
            }
            wordBefore = decodedByteBefore(start);
        }
        if (keywordWordStartOnly[keyword] && isAlnum(wordBefore)) {
            return;
        }
        // the raw bytes are the decoded text up to the first escape other than \" (which prechecks read as
        // a quote, see Precheck): a precheck that needs more answers true there, and the hit then waits for
        // the check on decoded text in resolve
        int limit = keywordPrechecked[keyword] ? precheckLimit(start, Math.min(rawLen, start + PRECHECK_RAW_BYTES))
                : start;
        addHit(keyword, start, wordBefore, raw, start, limit, decisive, false);
    }

    /** A tap keyword in the raw bytes at {@code start}: kept unless it begins inside an escape (JSON). */
    private void tapHit(int keyword, int start) {
        if (json && !(start >= 8 && noBackslashInSixBefore(start)) && escapeStart(start) != start) {
            return;
        }
        if (tap.wants(tapOf[keyword], raw, start, rawLen)) {
            tap.hit(rawBase + start, tapOf[keyword]);
        }
    }

    /** Raw bytes after a keyword given to a precheck at the hit (up to the first backslash). */
    private static final int PRECHECK_RAW_BYTES = 32;
    private static final long TOP_SIX_BYTES = 0xFFFFFFFFFFFF0000L;

    /** Answers whether {@code raw[i - 6, i)} holds no backslash ({@code i >= 8}). */
    private boolean noBackslashInSixBefore(int i) {
        long x = (long) JsonWindow.LONGS.get(raw, i - 8) ^ JsonWindow.BACKSLASHES;
        return ((x - JsonWindow.ONES) & ~x & JsonWindow.HIGHS & TOP_SIX_BYTES) == 0;
    }

    /** The first backslash in {@code raw[from, to)} that does not begin a {@code \"} escape, or {@code to}. */
    private int precheckLimit(int from, int to) {
        int i = from;
        while (true) {
            int b = JsonWindow.indexOfBackslash(raw, i, to);
            if (b >= to || b + 1 >= rawLen || raw[b + 1] != '"' || b == 0 || raw[b - 1] == '\\') {
                return b;
            }
            i = b + 2;
        }
    }

    /**
     * Records the detectors of {@code keyword} at raw index {@code rawStart} that pass their word-start
     * condition and precheck; the precheck runs on {@code text[at, limit)} when {@code decisive}. With
     * {@code dedupe}, a hit already pending for the same detector and offset is not added again (a keyword
     * with two escaped characters is found from both triggers).
     */
    private void addHit(int keyword, int rawStart, int wordBefore, byte[] text, int at, int limit, boolean decisive,
                        boolean dedupe) {
        boolean wordStart = !isAlnum(wordBefore);
        // a precheck object shared by several detectors of the keyword is evaluated once per hit (the
        // last two distinct ones are remembered)
        Precheck lastPre = null;
        boolean lastAnswer = true;
        Precheck otherPre = null;
        boolean otherAnswer = true;
        for (int d : prefilter.detectorsOf(keyword)) {
            if (!wordStart && wordStartOnly[d]) {
                continue;
            }
            // run the precheck now when its look-ahead has arrived: most hits of common keywords end here
            Precheck pre = prechecks[d];
            if (pre != null && decisive) {
                if (pre != lastPre) {
                    boolean answer = pre == otherPre ? otherAnswer : pre.mayMatch(text, at, limit);
                    otherPre = lastPre;
                    otherAnswer = lastAnswer;
                    lastPre = pre;
                    lastAnswer = answer;
                }
                if (!lastAnswer) {
                    continue;
                }
            }
            long abs = rawBase + rawStart;
            if (dedupe && hasHit(d, abs)) {
                continue;
            }
            if (hitCount == hitDet.length) {
                hitDet = Arrays.copyOf(hitDet, hitCount * 2);
                hitStart = Arrays.copyOf(hitStart, hitCount * 2);
            }
            hitDet[hitCount] = d;
            hitStart[hitCount] = abs;
            hitCount++;
        }
    }

    private boolean hasHit(int d, long abs) {
        for (int h = hitCount - 1; h >= 0; h--) {
            if (hitStart[h] == abs && hitDet[h] == d) {
                return true;
            }
        }
        return false;
    }

    private static boolean isContinuation(byte b) {
        return (b & 0xC0) == 0x80;
    }

    private static boolean isAlnum(int b) {
        return (b >= '0' && b <= '9') || ((b | 0x20) >= 'a' && (b | 0x20) <= 'z');
    }

    private void addTrigger(long abs) {
        if (triggerCount == triggers.length) {
            triggers = Arrays.copyOf(triggers, triggerCount * 2);
        }
        // reported in ascending order within a scan; keep the list sorted across scans too
        int i = triggerCount;
        while (i > 0 && triggers[i - 1] > abs) {
            i--;
        }
        if (i > 0 && triggers[i - 1] == abs) {
            return;
        }
        System.arraycopy(triggers, i, triggers, i + 1, triggerCount - i);
        triggers[i] = abs;
        triggerCount++;
    }

    /**
     * JSON: decodes windows around the escape triggers whose surroundings have arrived and records the
     * keywords there that contain an escaped character (a literal keyword was found by the raw scan).
     */
    private void examineTriggers(boolean finishing) {
        // a keyword's decoded bytes and, for a run keyword, its run context (KeywordPrefilter#scan)
        int reach = JSON_EXPANSION * prefilter.lookAhead();
        int i = 0;
        while (i < triggerCount) {
            int t = (int) (triggers[i] - rawBase);
            int from = escapeStart(Math.max(0, t - reach));
            int to = t + 12 + reach;
            int j = i + 1;
            while (j < triggerCount && triggers[j] - rawBase <= to && to - from < TRIGGER_WINDOW_BYTES) {
                to = (int) (triggers[j] - rawBase) + 12 + reach;
                j++;
            }
            if (to > rawLen) {
                if (!finishing) {
                    break;
                }
                to = rawLen;
            }
            jsonWindow.decode(raw, rawLen, from, to, finishing && to == rawLen, Integer.MAX_VALUE);
            final int windowStart = from;
            prefilter.scan(jsonWindow.bytes(), 0, jsonWindow.length(), jsonWindow.length(), (k, end) -> {
                if (k >= detectorKeywords) {
                    return;
                }
                int start = end - prefilter.keywordLength(k);
                if (!jsonWindow.hasEscapedByte(start, end)) {
                    // literal in the raw bytes, so found there, except a run keyword whose raw run is cut
                    // by an escape (a base64 run with \/ in it): the decoded window has the whole run
                    if (!prefilter.isRunKeyword(k)) {
                        return;
                    }
                    int rs = jsonWindow.rawStart(start);
                    if (KeywordPrefilter.inRun(raw, rs, rs + (end - start), rawLen)) {
                        return;
                    }
                }
                if (tap != null && tapOf[k] >= 0) {
                    tap.hit(rawBase + jsonWindow.rawStart(start), tapOf[k]);
                }
                byte[] win = jsonWindow.bytes();
                int winLen = jsonWindow.length();
                int wordBefore = start > 0 ? win[start - 1] : decodedByteBefore(windowStart);
                addHit(k, jsonWindow.rawStart(start), wordBefore, win, start, winLen, start + PRECHECK_LOOKAHEAD <= winLen, true);
            });
            i = j;
        }
        System.arraycopy(triggers, i, triggers, 0, triggerCount - i);
        triggerCount -= i;
    }

    private void resolve(boolean finishing) {
        long avail = rawBase + rawLen;
        int w = 0;
        cachedPrecheck = null;
        for (int h = 0; h < hitCount; h++) {
            int d = hitDet[h];
            long ks = hitStart[h];
            Detector det = detectorArray[d];
            // no shortcut for a keyword inside a match already found: its own match may reach further
            int state = json ? resolveJson(d, det, (int) (ks - rawBase), finishing) : resolvePlain(d, det, ks, avail, finishing);
            if (state == WAIT) {
                hitDet[w] = d;
                hitStart[w] = ks;
                w++;
            }
        }
        hitCount = w;
    }

    private static final int DONE = 0;
    private static final int WAIT = 1;

    private int resolvePlain(int d, Detector det, long ks, long avail, boolean finishing) {
        long regionEnd = ks + det.maxLength();
        if (!finishing && regionEnd + 1 > avail) {
            return WAIT;
        }
        regionEnd = Math.min(regionEnd, avail);
        int k = (int) (ks - rawBase);
        if (det.precheck() != null && !det.precheck().mayMatch(raw, k, rawLen)) {
            return DONE;
        }
        int regionStart = Math.max(k - det.maxCharsBeforeKeyword(), 0);
        view.set(raw, rawLen);
        match(d, det, regionStart, (int) (regionEnd - rawBase), raw, false);
        return DONE;
    }

    private int resolveJson(int d, Detector det, int k, boolean finishing) {
        int from = escapeStart(Math.max(0, k - JSON_EXPANSION * (det.maxCharsBeforeKeyword() + DetectorSet.CONTEXT_BYTES)));
        // decoded bytes before the keyword are at most the raw bytes before it
        int toKeyword = k - from;
        Precheck pre = det.precheck();
        if (pre != null && det.maxLength() >= PRECHECK_WINDOW) {
            if (pre == cachedPrecheck && k == cachedPrecheckAt) {
                // the same precheck object at the same keyword, for another detector: same answer
                if (!cachedPrecheckAnswer) {
                    return DONE;
                }
            } else {
                // most hits end at the precheck: decode only what it looks at first, from the keyword (a
                // keyword starts where an escape or a literal byte does)
                jsonWindow.decode(raw, rawLen, k, rawLen, finishing, PRECHECK_WINDOW);
                int winLen = jsonWindow.length();
                if (winLen == 0 && !finishing) {
                    return WAIT;
                }
                boolean answer = winLen > 0 && pre.mayMatch(jsonWindow.bytes(), 0, winLen);
                cachedPrecheck = pre;
                cachedPrecheckAt = k;
                cachedPrecheckAnswer = answer;
                if (!answer) {
                    return DONE;
                }
            }
        }
        jsonWindow.decode(raw, rawLen, from, rawLen, finishing, toKeyword + det.maxLength() + 1);
        byte[] win = jsonWindow.bytes();
        int winLen = jsonWindow.length();
        int kd = jsonWindow.indexAt(k);
        if (winLen < kd + det.maxLength() + 1 && !finishing) {
            return WAIT;
        }
        if (kd >= winLen) {
            return DONE;
        }
        if (pre != null && !pre.mayMatch(win, kd, winLen)) {
            return DONE;
        }
        int regionStart = Math.max(kd - det.maxCharsBeforeKeyword(), 0);
        int regionEnd = Math.min(kd + det.maxLength(), winLen);
        view.set(win, winLen);
        match(d, det, regionStart, regionEnd, win, true);
        return DONE;
    }

    /**
     * The last precheck answered on a {@link #PRECHECK_WINDOW} decode in this {@link #resolve} call, at raw
     * index {@link #cachedPrecheckAt}: hits of several detectors sharing one precheck object at one
     * keyword decode and test once.
     */
    private Precheck cachedPrecheck;
    private int cachedPrecheckAt;
    private boolean cachedPrecheckAnswer;

    /** Decoded bytes after a keyword given to a precheck before the whole region is decoded. */
    private static final int PRECHECK_WINDOW = 64;

    /** Runs detector {@code d}'s pattern on {@code text[regionStart, regionEnd)} (the {@link #view}). */
    private void match(int d, Detector det, int regionStart, int regionEnd, byte[] text, boolean window) {
        Matcher m = matcher(d);
        m.region(regionStart, regionEnd);
        if (det.maxCharsBeforeKeyword() == 0) {
            if (m.lookingAt()) {
                accept(d, det, m, text, window);
            }
        } else {
            while (m.find()) {
                accept(d, det, m, text, window);
            }
        }
    }

    /**
     * The shape of a credential placeholder ({@code dev.sluice.rules.credential.Placeholders#SHAPE}, kept
     * in step): what an extension holds instead of a real key is not a secret, and must reach the
     * credential phase intact to be swapped there or refused.
     */
    private static final java.util.regex.Pattern PLACEHOLDER =
            java.util.regex.Pattern.compile("sluice-cred-[A-Za-z0-9][A-Za-z0-9._-]{0,63}-[0-9a-f]{32}",
                    java.util.regex.Pattern.CASE_INSENSITIVE);

    /** Answers whether bytes {@code [s, e)} of {@code text} lie inside a placeholder. */
    private static boolean inPlaceholder(byte[] text, int s, int e, int end) {
        int from = Math.max(0, s - 110);
        int to = Math.min(Math.min(end, text.length), e + 110);
        if (to <= from) {
            return false;
        }
        Matcher m = PLACEHOLDER.matcher(new String(text, from, to - from, StandardCharsets.ISO_8859_1));
        while (m.find()) {
            if (from + m.start() <= s && from + m.end() >= e) {
                return true;
            }
        }
        return false;
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

    private void accept(int d, Detector det, Matcher m, byte[] text, boolean window) {
        int g = det.secretGroup();
        int s = m.start(g);
        int e = m.end(g);
        if (s < 0 || e <= s) {
            return;
        }
        if (det.validator() instanceof EncodedDetectors.Decoding decoding) {
            // an encoded token: scanned again decoded; the whole token is replaced, under the inner id
            if (depth >= EncodedDetectors.MAX_DEPTH) {
                return;
            }
            if (s == 0 && EncodedDetectors.looksBackInRun(det) && rawBase + (window ? jsonWindow.rawStart(0) : 0) > 0) {
                return; // the byte before is not known: the run may have begun earlier (and been released)
            }
            byte[] decoded = decoding.decode(new String(text, s, e - s, StandardCharsets.ISO_8859_1));
            int inner = decoded == null ? -1 : innerScan(decoded);
            if (inner < 0) {
                return;
            }
            d = inner;
        } else if (!det.accepts(new String(text, s, e - s, StandardCharsets.ISO_8859_1))) {
            return;
        }
        if (inPlaceholder(text, s, e, window ? jsonWindow.length() : rawLen)) {
            return;
        }
        // patterns count bytes: a match may begin or end inside a UTF-8 character; replace all of it
        for (int k = 0; k < 3 && s > 0 && isContinuation(text[s]); k++) {
            s--;
        }
        int textEnd = window ? jsonWindow.length() : rawLen;
        for (int k = 0; k < 3 && e < textEnd && isContinuation(text[e]); k++) {
            e++;
        }
        if (window) {
            addMatch(rawBase + jsonWindow.rawStart(s), rawBase + jsonWindow.rawEnd(e - 1), d);
        } else {
            addMatch(rawBase + s, rawBase + e, d);
        }
    }

    /** The last decoded token scanned and its answer (the hits of one token's escapes repeat it). */
    private byte[] lastDecoded;
    private int lastInner;

    /** Scans decoded bytes with this set one level deeper; the first detector that matched, or -1. */
    private int innerScan(byte[] decoded) {
        if (lastDecoded != null && Arrays.equals(decoded, lastDecoded)) {
            return lastInner;
        }
        StreamingRedactor r = new StreamingRedactor(set, BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, depth + 1);
        try {
            r.feed(decoded);
        } catch (BodyTooLargeException e) {
            throw new AssertionError(e); // no limit
        }
        r.finish();
        lastDecoded = decoded;
        lastInner = r.firstFinding();
        return lastInner;
    }

    /** The index of the first detector (in set order) with a finding, or -1. */
    int firstFinding() {
        int first = Integer.MAX_VALUE;
        for (int i = 0; i < counts.length && first == Integer.MAX_VALUE; i++) {
            if (counts[i] > 0) {
                first = i;
            }
        }
        for (int i = 0; i < matches.count(); i++) {
            first = Math.min(first, matches.detector(i));
        }
        return first == Integer.MAX_VALUE ? -1 : first;
    }

    /** The first absolute raw offset that a match not yet found could still cover. */
    private long unsettled(boolean finishing) {
        if (finishing) {
            return rawBase + rawLen;
        }
        long limit = rawBase + rawLen - holdback;
        for (int h = 0; h < hitCount; h++) {
            limit = Math.min(limit, hitStart[h] - (long) expansion * detectorArray[hitDet[h]].maxCharsBeforeKeyword());
        }
        if (triggerCount > 0) {
            limit = Math.min(limit, triggers[0] - (long) JSON_EXPANSION * (prefilter.lookAhead() + maxBefore));
        }
        return runLookBack > 0 ? runStart(limit) : limit;
    }

    /**
     * When absolute offset {@code limit} lies inside a run of base64 characters (in JSON also
     * backslashes, for {@code \/}) that began at most {@link #runLookBack} bytes before it (in JSON
     * {@value #JSON_EXPANSION} times that: the look-back counts decoded characters, and escapes such as
     * {@code &#92;u002B} for {@code +}, which some encoders write, make the raw run longer), the run's start;
     * otherwise {@code limit}. A keyword of a detector that looks back within a run may still come later
     * in the run, whose whole encoded text it must then replace.
     */
    private long runStart(long limit) {
        int i = (int) (limit - rawBase);
        if (i <= 0 || i >= rawLen || !runByte(raw[i]) || !runByte(raw[i - 1])) {
            return limit;
        }
        int bound = Math.max(0, i - expansion * runLookBack);
        int j = i - 1;
        while (j > bound && runByte(raw[j - 1])) {
            j--;
        }
        if (j == bound && (j > 0 ? runByte(raw[j - 1]) : rawBase > 0)) {
            return limit; // longer than the look-back, or begun in bytes already released
        }
        return rawBase + j;
    }

    private boolean runByte(byte b) {
        return EncodedDetectors.isBase64Char(b) || (json && b == '\\');
    }

    /** Hands the bytes settled so far, and the matches in them, to the release. */
    private void emit(boolean finishing) {
        long limit = unsettled(finishing);
        if (json && !finishing && limit > rawBase) {
            limit = rawBase + escapeStart((int) (Math.min(limit, rawBase + rawLen) - rawBase));
        }
        release.release(raw, rawBase, baseEscaped, matches, limit, produce && !blocked, counts);
    }

    private void addMatch(long s, long e, int d) {
        if (e <= release.emitted()) {
            return;
        }
        if (s < release.emitted()) {
            s = release.emitted();
        }
        matches.add(s, e, d);
        if (action == RedactionAction.BLOCK) {
            blocked = true;
        }
    }

    // ------------------------------------------------------------------ JSON escapes

    /**
     * Answers whether {@code raw[i]} follows an escaping backslash: the run of backslashes just before it
     * is odd (with {@link #baseEscaped} for a run reaching the start of the buffer).
     */
    boolean escaped(int i) {
        return Release.escaped(raw, i, baseEscaped);
    }

    /** Returns the index where the escape (or plain byte) containing {@code raw[i]} begins. */
    int escapeStart(int i) {
        if (i <= 0 || i >= rawLen) {
            return Math.max(0, Math.min(i, rawLen));
        }
        if (escaped(i)) {
            return i - 1;
        }
        if (JsonWindow.isHex(raw[i]) || raw[i] == 'u') {
            // inside \\uXXXX: a backslash-u 2 to 5 bytes before, not itself escaped, with hex digits up to i
            for (int b = i - 1; b >= Math.max(0, i - 5); b--) {
                if (raw[b] == '\\') {
                    if (b + 1 < rawLen && raw[b + 1] == 'u' && !escaped(b) && hexUpTo(b + 2, i)) {
                        return b;
                    }
                    break;
                }
            }
        }
        return i;
    }

    private boolean hexUpTo(int from, int to) {
        for (int p = from; p <= to && p < rawLen; p++) {
            if (p < from + 4 && !JsonWindow.isHex(raw[p])) {
                return false;
            }
        }
        return to < from + 4;
    }

    /** The decoded byte just before the one at raw index {@code i} (a space at the start of the body). */
    private int decodedByteBefore(int i) {
        if (i <= 0) {
            return ' ';
        }
        int j = escapeStart(i - 1);
        if (j == i - 1) {
            return raw[i - 1];
        }
        if (i - j == 2) {
            return '\n'; // \n, \t, \", \\, \/ ...: none decodes to a letter or digit
        }
        int cu = i - j == 6 ? JsonWindow.hex4(raw, rawLen, j + 2) : -1;
        return cu >= 0 && cu < 0x80 ? cu : 0x80;
    }

    // ------------------------------------------------------------------ buffers

    private void compact() {
        long keep = Math.min(release.emitted(), unsettled(false) - (json ? 12 : 0));
        if (tap != null) {
            // a pending tap hit reads text before it, and so does one not found yet (an escape trigger's
            // keyword starts before the trigger)
            long next = triggerCount > 0 ? Math.min(scanned, triggers[0]) : scanned;
            keep = Math.min(keep, Math.min(tap.keepFrom(), next - tap.lookBehindBytes(maxKeyword)));
        }
        keep = Math.max(rawBase, keep - (long) expansion * DetectorSet.CONTEXT_BYTES);
        int drop = (int) (keep - rawBase);
        if (drop <= 0) {
            return;
        }
        if (json) {
            baseEscaped = escaped(drop);
        }
        System.arraycopy(raw, drop, raw, 0, rawLen - drop);
        rawLen -= drop;
        rawBase = keep;
    }

    private void ensureRaw(int more) {
        if (rawLen + more > raw.length) {
            raw = Arrays.copyOf(raw, Math.max(raw.length * 2, rawLen + more));
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
