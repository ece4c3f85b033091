package dev.sluice.rules.redact;

/**
 * The release of a {@link StreamingRedactor}: writes what the redactor has settled into its
 * {@link OutputBuffer}, raw bytes no match can still cover and, for each accepted match, its
 * replacement, and keeps the books of what was released.
 *
 * <p>Units: offsets are absolute raw (encoded) byte offsets of the body, as in {@link PendingMatches};
 * {@link #emitted()} is the first raw offset not yet released; {@link #bytesOut()} counts output bytes
 * handed to the caller. Buffers: owns the output buffer (reused across calls, see
 * {@link OutputBuffer#take()}) and the replacement texts; reads, never keeps, the redactor's raw buffer,
 * which each call passes with its base offset (the redactor grows and compacts it). In JSON a match is
 * replaced piece by piece between unescaped quotes, so the output stays valid JSON; a piece of only
 * punctuation and whitespace is kept. Single-threaded, one per redactor; no allocation per call.
 */
final class Release {

    private final OutputBuffer output;
    /** The replacement text of each detector, by detector index. */
    private final byte[][] replacements;
    private final boolean json;
    private final KeywordPrefilter prefilter;

    private long rawEmitted;
    private long bytesOut;

    Release(OutputBuffer output, byte[][] replacements, boolean json, KeywordPrefilter prefilter) {
        this.output = output;
        this.replacements = replacements;
        this.json = json;
        this.prefilter = prefilter;
    }

    /** The first absolute raw offset not yet released. */
    long emitted() {
        return rawEmitted;
    }

    /** Output bytes handed out so far. */
    long bytesOut() {
        return bytesOut;
    }

    /** Counts {@code n} bytes handed out as they came in (report mode). */
    void passedThrough(long n) {
        bytesOut += n;
    }

    /** Forgets the output written (the start of a call). */
    void reset() {
        output.reset();
    }

    /** Returns the output of this call (see {@link OutputBuffer#take()}) and counts it. */
    byte[] take() {
        byte[] r = output.take();
        bytesOut += r.length;
        return r;
    }

    /** The bytes of the output array held. */
    int capacity() {
        return output.capacity();
    }

    /**
     * Releases raw bytes up to absolute offset {@code limit}, replacing every pending match that starts
     * before it (and removing it from {@code matches}, counted in {@code counts}); a match that ends past
     * {@code limit} is kept whole, with the bytes from its start. {@code raw[0]} is at absolute offset
     * {@code rawBase}; {@code baseEscaped} tells whether it follows an escaping backslash. With
     * {@code write} false the bytes are released without being written (blocked or report mode).
     */
    void release(byte[] raw, long rawBase, boolean baseEscaped, PendingMatches matches, long limit, boolean write,
                 long[] counts) {
        if (limit <= rawEmitted && matches.count() == 0) {
            return;
        }
        long stop = limit;
        while (matches.count() > 0 && matches.firstStart() < limit) {
            if (matches.firstEnd() > limit) {
                // a hit still pending inside the match may extend it: keep it whole until then
                stop = matches.firstStart();
                break;
            }
            long ms = matches.firstStart();
            long me = matches.firstEnd();
            int d = matches.detector(0);
            copyRaw(raw, rawBase, ms, write);
            writeReplacement(raw, rawBase, baseEscaped, ms, me, d, write);
            counts[d]++;
            matches.removeFirst();
        }
        if (rawEmitted < stop) {
            copyRaw(raw, rawBase, stop, write);
        }
    }

    /** Copies raw bytes from {@link #emitted()} up to absolute offset {@code to} into the output. */
    private void copyRaw(byte[] raw, long rawBase, long to, boolean write) {
        if (to <= rawEmitted) {
            return;
        }
        if (write) {
            output.append(raw, (int) (rawEmitted - rawBase), (int) (to - rawEmitted));
        }
        rawEmitted = to;
    }

    private void writeBytes(byte[] b, boolean write) {
        if (write) {
            output.append(b);
        }
    }

    /** Replaces raw {@code [ms, me)}; in JSON, split at unescaped quotes, as the class comment says. */
    private void writeReplacement(byte[] raw, long rawBase, boolean baseEscaped, long ms, long me, int d,
                                  boolean write) {
        if (!json) {
            writeBytes(replacements[d], write);
            rawEmitted = me;
            return;
        }
        int end = (int) (me - rawBase);
        int piece = (int) (ms - rawBase);
        for (int q = prefilter.indexOfQuote(raw, piece, end); q < end; q = prefilter.indexOfQuote(raw, q + 1, end)) {
            if (escaped(raw, q, baseEscaped)) {
                continue;
            }
            writePiece(raw, rawBase, piece, q, d, write);
            copyRaw(raw, rawBase, rawBase + q + 1, write); // the quote itself
            piece = q + 1;
        }
        writePiece(raw, rawBase, piece, end, d, write);
    }

    /**
     * Writes the replacement for raw {@code [from, to)}, or keeps it when it is only JSON punctuation and
     * whitespace (what separates strings; inside a string such a piece holds no letter or digit of a
     * secret).
     */
    private void writePiece(byte[] raw, long rawBase, int from, int to, int d, boolean write) {
        if (from >= to) {
            return;
        }
        if (punctuationOnly(raw, from, to)) {
            copyRaw(raw, rawBase, rawBase + to, write);
        } else {
            writeBytes(replacements[d], write);
        }
        rawEmitted = rawBase + to;
    }

    private static boolean punctuationOnly(byte[] raw, int from, int to) {
        for (int p = from; p < to; p++) {
            switch (raw[p]) {
                case '{': case '}': case '[': case ']': case ',': case ':': case ' ': case '\t': case '\r': case '\n':
                    break;
                default:
                    return false;
            }
        }
        return true;
    }

    /**
     * Answers whether {@code raw[i]} follows an escaping backslash: the run of backslashes just before it
     * is odd (with {@code baseEscaped} for a run reaching the start of the buffer).
     */
    static boolean escaped(byte[] raw, int i, boolean baseEscaped) {
        int j = i - 1;
        while (j >= 0 && raw[j] == '\\') {
            j--;
        }
        int run = i - 1 - j;
        boolean first = j < 0 && baseEscaped; // the first byte of the buffer was itself escaped
        return ((run & 1) == 1) != first;
    }
}
