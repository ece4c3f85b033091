package dev.sluice.rules.redact;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The {@link KeywordTap} side of a {@link StreamingRedactor}: the tap keyword hits the redactor's
 * keyword scan found, held until the text after them has arrived, then read out as the decoded JSON
 * string around them (see {@link KeywordTap#onString}). A hit inside a member name is dropped. The raw
 * bytes a pending hit needs are kept by the redactor ({@link #keepFrom}). Single-threaded, one per redactor.
 *
 * <p>A plain-text redactor (the decoded text of a response, {@link BodyFormat#PLAIN}) has no strings: the
 * text read out around a group of hits is the bytes from {@code charsBefore} before the first to
 * {@code charsAfter} after the last one's start, cut at what is held, with neither end a string's.
 *
 * <p>Around a hit the string's bounds are its nearest unescaped quotes (a keyword found by the raw scan is
 * taken to lie inside a string, which is where text is); without a backslash near the hit the raw bytes
 * are the decoded text and only {@code charsBefore} / {@code charsAfter} bytes are read, else up to
 * {@value StreamingRedactor#JSON_EXPANSION} raw bytes per character.
 */
final class TapReader {

    private final StreamingRedactor redactor;
    private final KeywordTap tap;
    private final int[] before;
    private final int[] after;
    private final int maxBefore;
    /** Whether the body is JSON (else plain text: raw bytes are the text). */
    private final boolean json;
    /** Raw bytes per decoded byte at most. */
    private final int expansion;
    private final JsonWindow window = new JsonWindow();

    // pending hits: absolute raw offset of the keyword's start, tap keyword index
    private long[] hitAt = new long[16];
    private int[] hitKw = new int[16];
    private int hitCount;

    // one group's hits, handed to the tap
    private int[] groupAt = new int[16];
    private int[] groupKw = new int[16];
    private long[] groupRaw = new long[16];

    TapReader(StreamingRedactor redactor, List<TapKeyword> keywords, KeywordTap tap, boolean json) {
        this.redactor = redactor;
        this.json = json;
        this.expansion = json ? StreamingRedactor.JSON_EXPANSION : 1;
        this.tap = tap;
        this.before = keywords.stream().mapToInt(TapKeyword::charsBefore).toArray();
        this.after = keywords.stream().mapToInt(TapKeyword::charsAfter).toArray();
        this.maxBefore = Arrays.stream(before).max().orElse(0);
    }

    /** Answers whether the tap keeps the hit of {@code kw} at raw index {@code at} ({@link KeywordTap#wants}). */
    boolean wants(int kw, byte[] raw, int at, int limit) {
        return tap.wants(kw, raw, at, limit);
    }

    /** Records tap keyword {@code kw} starting at absolute raw offset {@code abs} (a repeat is ignored). */
    void hit(long abs, int kw) {
        int i = hitCount;
        while (i > 0 && hitAt[i - 1] > abs) {
            i--;
        }
        for (int j = i - 1; j >= 0 && hitAt[j] == abs; j--) {
            if (hitKw[j] == kw) {
                return;
            }
        }
        if (hitCount == hitAt.length) {
            hitAt = Arrays.copyOf(hitAt, hitCount * 2);
            hitKw = Arrays.copyOf(hitKw, hitCount * 2);
        }
        System.arraycopy(hitAt, i, hitAt, i + 1, hitCount - i);
        System.arraycopy(hitKw, i, hitKw, i + 1, hitCount - i);
        hitAt[i] = abs;
        hitKw[i] = kw;
        hitCount++;
    }

    /** The first absolute raw offset a pending hit may still read ({@code Long.MAX_VALUE} for none). */
    long keepFrom() {
        return hitCount == 0 ? Long.MAX_VALUE
                : hitAt[0] - (long) expansion * (maxBefore + 2) - 8;
    }

    /** Raw bytes a hit found at or after a position may read before it (keywords up to {@code maxKeyword} bytes). */
    long lookBehindBytes(int maxKeyword) {
        return (long) expansion * (maxBefore + 2 + maxKeyword) + 8;
    }

    // a provisional read (settle): the pending hits as they were before it
    private long[] savedAt;
    private int[] savedKw;
    private int savedCount = -1;

    /** Starts a provisional read: hits recorded until {@link #endSettle} are read out then and forgotten. */
    void beginSettle() {
        savedAt = Arrays.copyOf(hitAt, hitCount);
        savedKw = Arrays.copyOf(hitKw, hitCount);
        savedCount = hitCount;
    }

    /**
     * Reads out every pending hit (those of {@link #beginSettle} and the ones recorded since) with the text
     * that has arrived, as at the body's end, then puts the pending hits back as they were before
     * {@link #beginSettle}: they are read out again once their text has arrived.
     */
    void endSettle(byte[] raw, int rawLen, long rawBase) {
        resolve(raw, rawLen, rawBase, true);
        if (hitAt.length < savedCount) {
            hitAt = new long[savedAt.length];
            hitKw = new int[savedAt.length];
        }
        System.arraycopy(savedAt, 0, hitAt, 0, savedCount);
        System.arraycopy(savedKw, 0, hitKw, 0, savedCount);
        hitCount = savedCount;
        savedAt = null;
        savedKw = null;
        savedCount = -1;
    }

    // the bounds of the hit last examined (raw indexes) and whether they are the string's quotes
    private int lo;
    private int hi;
    private boolean loQuote;
    private boolean hiQuote;

    /**
     * Reads out the hits whose text has arrived (all of them when {@code finishing}), in groups of hits
     * whose texts overlap in one string.
     */
    void resolve(byte[] raw, int rawLen, long rawBase, boolean finishing) {
        if (!json) {
            resolvePlain(raw, rawLen, rawBase, finishing);
            return;
        }
        int done = 0;
        while (done < hitCount) {
            int k = (int) (hitAt[done] - rawBase);
            if (!bounds(raw, rawLen, k, hitKw[done], finishing)) {
                break; // waits for more input (hits are in order: so do the later ones)
            }
            int gStart = lo;
            int gEnd = hi;
            boolean gStartQuote = loQuote;
            boolean gEndQuote = hiQuote;
            int n = 0;
            n = add(n, hitAt[done], hitKw[done]);
            int next = done + 1;
            while (next < hitCount && hitAt[next] - rawBase < gEnd) {
                int k2 = (int) (hitAt[next] - rawBase);
                if (!bounds(raw, rawLen, k2, hitKw[next], finishing)) {
                    break;
                }
                if (lo < gStart) {
                    gStart = lo;
                    gStartQuote = loQuote;
                }
                if (hi >= gEnd) {
                    gEnd = hi;
                    gEndQuote = hiQuote;
                }
                n = add(n, hitAt[next], hitKw[next]);
                next++;
            }
            if (next < hitCount && hitAt[next] - rawBase < gEnd) {
                break; // a hit of this group still waits: the whole group does
            }
            done = next;
            if (!gEndQuote || !memberName(raw, rawLen, gEnd, finishing)) {
                report(raw, rawLen, rawBase, gStart, gEnd, gStartQuote, gEndQuote, n, finishing);
            }
        }
        System.arraycopy(hitAt, done, hitAt, 0, hitCount - done);
        System.arraycopy(hitKw, done, hitKw, 0, hitCount - done);
        hitCount -= done;
    }

    /** {@link #resolve} for plain text: a hit waits for its {@code charsAfter} bytes, and groups join when they overlap. */
    private void resolvePlain(byte[] raw, int rawLen, long rawBase, boolean finishing) {
        int done = 0;
        while (done < hitCount) {
            int k = (int) (hitAt[done] - rawBase);
            int kw = hitKw[done];
            if (k + after[kw] > rawLen && !finishing) {
                break;
            }
            int gStart = Math.max(0, k - before[kw]);
            int gEnd = Math.min(rawLen, k + after[kw]);
            int n = add(0, hitAt[done], kw);
            int next = done + 1;
            boolean waits = false;
            while (next < hitCount && hitAt[next] - rawBase < gEnd) {
                int k2 = (int) (hitAt[next] - rawBase);
                int kw2 = hitKw[next];
                if (k2 + after[kw2] > rawLen && !finishing) {
                    waits = true;
                    break;
                }
                gStart = Math.min(gStart, Math.max(0, k2 - before[kw2]));
                gEnd = Math.max(gEnd, Math.min(rawLen, k2 + after[kw2]));
                n = add(n, hitAt[next], kw2);
                next++;
            }
            if (waits) {
                break; // a hit of this group still waits: the whole group does
            }
            done = next;
            int cutFrom = gStart;
            int cutTo = gEnd;
            for (int h = 0; h < n; h++) {
                groupAt[h] = (int) (groupRaw[h] - rawBase);
            }
            deliver(raw, cutFrom, cutTo, rawLen, n, false, false);
        }
        System.arraycopy(hitAt, done, hitAt, 0, hitCount - done);
        System.arraycopy(hitKw, done, hitKw, 0, hitCount - done);
        hitCount -= done;
    }

    private int add(int n, long abs, int kw) {
        if (n == groupAt.length) {
            groupAt = Arrays.copyOf(groupAt, n * 2);
            groupKw = Arrays.copyOf(groupKw, n * 2);
            groupRaw = Arrays.copyOf(groupRaw, n * 2);
        }
        groupRaw[n] = abs;
        groupKw[n] = kw;
        return n + 1;
    }

    /**
     * Sets {@link #lo} / {@link #hi} to the raw span around the hit at raw index {@code k}; false when the
     * bytes after it have not arrived yet.
     */
    private boolean bounds(byte[] raw, int rawLen, int k, int kw, boolean finishing) {
        int b = before[kw];
        int a = after[kw];
        // forward: a characters (escapes counted as the one they stand for), or up to the closing quote
        int i = k;
        int chars = 0;
        while (true) {
            int j = i;
            int stop = Math.min(rawLen, i + (a - chars));
            while (j < stop && raw[j] != '"' && raw[j] != '\\') {
                j++;
            }
            chars += j - i;
            i = j;
            if (chars >= a) {
                hi = i;
                hiQuote = false;
                break;
            }
            if (i >= rawLen) {
                if (!finishing) {
                    return false;
                }
                hi = rawLen;
                hiQuote = false;
                break;
            }
            if (raw[i] == '"') {
                hi = i;
                hiQuote = true;
                break;
            }
            int len = i + 1 < rawLen && raw[i + 1] == 'u' ? 6 : 2;
            if (i + len > rawLen) {
                if (!finishing) {
                    return false;
                }
                hi = rawLen;
                hiQuote = false;
                break;
            }
            i += len;
            chars++;
        }
        // backward: the opening quote, or b bytes of plain text
        int start = k - b;
        int j = k - 1;
        int floor = Math.max(start, 0);
        while (j >= floor && raw[j] != '"' && raw[j] != '\\') {
            j--;
        }
        if (j < floor) {
            lo = redactor.escapeStart(floor); // an escape may end inside the span: take it whole
            loQuote = false;
        } else if (raw[j] == '"' && !redactor.escaped(j)) {
            lo = j + 1;
            loQuote = true;
        } else {
            // escapes near: look twice as far first, and up to JSON_EXPANSION bytes a character when the
            // characters there are still fewer than b
            if (!quoteBack(raw, j, Math.max(0, k - 2 * b - 16)) && charsBetween(raw, lo, k) < b) {
                quoteBack(raw, lo - 1, Math.max(0, k - StreamingRedactor.JSON_EXPANSION * b));
            }
        }
        return true;
    }

    /**
     * Looks for the opening quote from raw index {@code from} down to {@code floor}: sets {@link #lo} after it
     * (true), or to the escape start at {@code floor} (false).
     */
    private boolean quoteBack(byte[] raw, int from, int floor) {
        for (int q = from; q >= floor; q--) {
            if (raw[q] == '"' && !redactor.escaped(q)) {
                lo = q + 1;
                loQuote = true;
                return true;
            }
        }
        lo = redactor.escapeStart(floor);
        loQuote = false;
        return false;
    }

    /** The decoded characters in {@code raw[from, to)} ({@code from} at an escape's or a byte's start). */
    private static int charsBetween(byte[] raw, int from, int to) {
        int chars = 0;
        for (int i = from; i < to; chars++) {
            i += raw[i] != '\\' ? 1 : i + 1 < to && raw[i + 1] == 'u' ? 6 : 2;
        }
        return chars;
    }

    /** Answers whether the string closed by the quote at raw index {@code q} is a member name. */
    private static boolean memberName(byte[] raw, int rawLen, int q, boolean finishing) {
        for (int i = q + 1; i < rawLen; i++) {
            byte c = raw[i];
            if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
                return c == ':';
            }
        }
        return false;
    }

    private void report(byte[] raw, int rawLen, long rawBase, int from, int to, boolean startQuote, boolean endQuote,
                        int n, boolean finishing) {
        window.decode(raw, rawLen, from, to, finishing && to == rawLen, Integer.MAX_VALUE);
        byte[] w = window.bytes();
        int len = window.length();
        int first = window.indexAt((int) (groupRaw[0] - rawBase));
        int last = window.indexAt((int) (groupRaw[n - 1] - rawBase));
        int cutFrom = first;
        int cutTo = len;
        int reach = 0;
        for (int h = 0; h < n; h++) {
            int at = window.indexAt((int) (groupRaw[h] - rawBase));
            reach = Math.max(reach, at + after[groupKw[h]]);
            cutFrom = Math.min(cutFrom, at - before[groupKw[h]]);
            groupAt[h] = at;
        }
        cutFrom = Math.max(0, cutFrom);
        cutTo = Math.min(len, Math.max(reach, last + 1));
        deliver(w, cutFrom, cutTo, len, n, startQuote, endQuote);
    }

    /**
     * Hands {@code w[cutFrom, cutTo)} (widened to whole UTF-8 characters within {@code w[0, len)}) to the
     * tap, with the group's hits at {@link #groupAt} (indexes into {@code w}, turned into char indexes).
     */
    private void deliver(byte[] w, int cutFrom, int cutTo, int len, int n, boolean startQuote, boolean endQuote) {
        // whole UTF-8 characters only
        while (cutFrom > 0 && (w[cutFrom] & 0xC0) == 0x80) {
            cutFrom--;
        }
        while (cutTo < len && (w[cutTo] & 0xC0) == 0x80) {
            cutTo++;
        }
        boolean s = startQuote && cutFrom == 0;
        boolean e = endQuote && cutTo == len;
        boolean ascii = true;
        for (int i = cutFrom; i < cutTo; i++) {
            if (w[i] < 0) {
                ascii = false;
                break;
            }
        }
        String text;
        if (ascii) {
            text = new String(w, cutFrom, cutTo - cutFrom, StandardCharsets.ISO_8859_1);
            for (int h = 0; h < n; h++) {
                groupAt[h] -= cutFrom;
            }
        } else {
            text = new String(w, cutFrom, cutTo - cutFrom, StandardCharsets.UTF_8);
            // byte index -> char index: one char per UTF-8 lead byte, two for a four-byte sequence
            int chars = 0;
            int h = 0;
            for (int i = cutFrom; i <= cutTo && h < n; i++) {
                while (h < n && groupAt[h] == i) {
                    groupAt[h++] = chars;
                }
                if (i < cutTo) {
                    int c = w[i] & 0xff;
                    if ((c & 0xC0) != 0x80) {
                        chars += c >= 0xF0 ? 2 : 1;
                    }
                }
            }
        }
        tap.onString(text, groupAt, groupKw, n, s, e);
    }
}
