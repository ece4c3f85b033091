package dev.sluice.rules.redact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The decoded window of a {@link StreamingRedactor} in JSON mode: a span of the redactor's raw bytes
 * with its JSON escapes undone (RFC 8259 section 7: {@code \"}, {@code \\}, {@code \/}, {@code \b},
 * {@code \f}, {@code \n}, {@code \r}, {@code \t}, {@code &#92;uXXXX} with surrogate pairs, to UTF-8; any
 * other backslash is kept literally), and for every decoded byte the raw span it came from (a whole escape),
 * so a match found in the decoded text maps back to the raw bytes to replace.
 *
 * <p>Owns its decoded bytes and segment arrays (reused for every decode, grown as needed); reads the
 * raw bytes given to {@link #decode} and never writes them. Single-threaded, one per redactor.
 */
final class JsonWindow {

    static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    static final long ONES = 0x0101010101010101L;
    static final long HIGHS = 0x8080808080808080L;
    static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;

    /** The decoded bytes, {@code win[0, winLen)}; replaced when it grows. */
    private byte[] win = new byte[1024];
    private int winLen;
    // segment j starts at decoded index segDec[j] and raw index segRaw[j]; segRawLen[j] is 0 for a run of
    // literal bytes (one raw byte each) or the raw length of one escape (all its decoded bytes come from
    // the whole escape)
    private int[] segDec = new int[64];
    private int[] segRaw = new int[64];
    private byte[] segRawLen = new byte[64];
    private int segCount;
    /** Bytes the last {@link #decodeEscape} appended. */
    private int decodedLength;
    /** The raw bytes of the last {@link #decode} (the redactor's buffer; read, never written) and their length. */
    private byte[] raw;
    private int rawLen;

    /** Returns the decoded bytes (valid up to {@link #length()}; the array is replaced when it grows). */
    byte[] bytes() {
        return win;
    }

    /** Returns the number of decoded bytes. */
    int length() {
        return winLen;
    }

    /** Returns the bytes of the arrays held (capacity). */
    long retainedBytes() {
        return win.length + 9L * segDec.length;
    }

    /**
     * Decodes {@code raw[from, to)} (of {@code raw[0, rawLen)}) into the window: escapes are undone, runs of other bytes are copied.
     * Stops before an escape cut by {@code to} unless {@code atEnd} (the body ends there: the backslash is
     * then literal), and after about {@code maxOut} decoded bytes (at most 3 more, from one escape).
     */
    void decode(byte[] raw, int rawLen, int from, int to, boolean atEnd, int maxOut) {
        this.raw = raw;
        this.rawLen = rawLen;
        winLen = 0;
        segCount = 0;
        int i = from;
        while (i < to && winLen < maxOut) {
            int room = maxOut - winLen;
            int run = indexOfBackslash(raw, i, room >= to - i ? to : i + room);
            if (run > i) {
                int n = run - i;
                ensureWin(n);
                System.arraycopy(raw, i, win, winLen, n);
                addSegment(i, 0);
                winLen += n;
                i = run;
                continue;
            }
            ensureWin(4);
            int start = winLen;
            int used = decodeEscape(i, to, atEnd);
            if (used == 0) {
                break;
            }
            winLen = start; // decodeEscape appended; record the segment at its start
            addSegment(i, used == 1 ? 0 : used);
            winLen = start + decodedLength;
            i += used;
        }
    }

    /** Decodes the escape at raw index {@code i}; returns raw bytes consumed, 0 when cut by {@code to}. */
    private int decodeEscape(int i, int to, boolean atEnd) {
        decodedLength = 0;
        int avail = to - i;
        if (avail < 2) {
            return atEnd ? literalBackslash(i) : 0;
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
            default: return literalBackslash(i);
        }
        if (v >= 0) {
            putWin(v);
            return 2;
        }
        if (avail < 6) {
            return atEnd ? literalBackslash(i) : 0;
        }
        int cu = hex4(raw, rawLen, i + 2);
        if (cu < 0) {
            return literalBackslash(i);
        }
        int cp = cu;
        int rawUsed = 6;
        if (cu >= 0xD800 && cu <= 0xDBFF) {
            if (avail < 12 && !atEnd) {
                return 0;
            }
            int lo = avail >= 12 && raw[i + 6] == '\\' && raw[i + 7] == 'u' ? hex4(raw, rawLen, i + 8) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cu - 0xD800) << 10) + (lo - 0xDC00);
                rawUsed = 12;
            } else {
                cp = 0xFFFD;
            }
        } else if (cu >= 0xDC00 && cu <= 0xDFFF) {
            cp = 0xFFFD;
        }
        int e = i + rawUsed;
        if (cp < 0x80) {
            putWin(cp);
        } else if (cp < 0x800) {
            putWin(0xC0 | (cp >> 6));
            putWin(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            putWin(0xE0 | (cp >> 12));
            putWin(0x80 | ((cp >> 6) & 0x3F));
            putWin(0x80 | (cp & 0x3F));
        } else {
            putWin(0xF0 | (cp >> 18));
            putWin(0x80 | ((cp >> 12) & 0x3F));
            putWin(0x80 | ((cp >> 6) & 0x3F));
            putWin(0x80 | (cp & 0x3F));
        }
        return rawUsed;
    }

    private int literalBackslash(int i) {
        putWin('\\');
        return 1;
    }

    private void putWin(int b) {
        win[winLen++] = (byte) b;
        decodedLength++;
    }

    private void addSegment(int rawStart, int rawLength) {
        if (segCount == segDec.length) {
            int n = segCount * 2;
            segDec = Arrays.copyOf(segDec, n);
            segRaw = Arrays.copyOf(segRaw, n);
            segRawLen = Arrays.copyOf(segRawLen, n);
        }
        segDec[segCount] = winLen;
        segRaw[segCount] = rawStart;
        segRawLen[segCount] = (byte) rawLength;
        segCount++;
    }

    /** The last segment starting at or before decoded index {@code i}. */
    private int segmentOf(int i) {
        int lo = 0;
        int hi = segCount - 1;
        int r = 0;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (segDec[mid] <= i) {
                r = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return r;
    }

    /** Raw index where decoded byte {@code i} of the window begins (the start of its escape). */
    int rawStart(int i) {
        int j = segmentOf(i);
        return segRawLen[j] == 0 ? segRaw[j] + (i - segDec[j]) : segRaw[j];
    }

    /** Raw index just after decoded byte {@code i} of the window (the end of its escape). */
    int rawEnd(int i) {
        int j = segmentOf(i);
        return segRawLen[j] == 0 ? segRaw[j] + (i - segDec[j]) + 1 : segRaw[j] + segRawLen[j];
    }

    /** The first index of the window whose raw start is at or after raw index {@code k} ({@link #length()} if none). */
    int indexAt(int k) {
        int lo = 0;
        int hi = segCount - 1;
        int j = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (segRaw[mid] <= k) {
                j = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        if (j < 0) {
            return 0;
        }
        int next = j + 1 < segCount ? segDec[j + 1] : winLen;
        if (segRaw[j] == k) {
            return segDec[j];
        }
        if (segRawLen[j] == 0 && k - segRaw[j] < next - segDec[j]) {
            return segDec[j] + (k - segRaw[j]);
        }
        return next;
    }

    /** Answers whether any of {@code win[from, to)} came from a {@code &#92;u} or {@code \/} escape. */
    boolean hasEscapedByte(int from, int to) {
        for (int j = segmentOf(from); j < segCount && segDec[j] < to; j++) {
            if (segRawLen[j] != 0) {
                byte c = raw[segRaw[j] + 1];
                if (c == 'u' || c == '/') {
                    return true;
                }
            }
        }
        return false;
    }

    private void ensureWin(int more) {
        if (winLen + more > win.length) {
            win = Arrays.copyOf(win, Math.max(win.length * 2, winLen + more));
        }
    }

    /** The value of the four hex digits at {@code raw[at]} (of {@code raw[0, rawLen)}), or -1. */
    static int hex4(byte[] raw, int rawLen, int at) {
        if (at + 4 > rawLen) {
            return -1;
        }
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

    static boolean isHex(byte c) {
        return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
    }

    /** The first index in {@code [from, to)} holding a backslash, or {@code to}. */
    static int indexOfBackslash(byte[] a, int from, int to) {
        return indexOf(a, from, to, BACKSLASHES);
    }

    /**
     * Eight bytes at a time: a byte equal to the searched one becomes zero after XOR, and the lowest zero
     * byte of a word is found exactly by {@code (x - 0x01..) & ~x & 0x80..} (higher bytes may be flagged
     * falsely, never lower ones).
     */
    private static int indexOf(byte[] a, int from, int to, long pattern) {
        int j = from;
        for (; j + 8 <= to; j += 8) {
            long x = (long) LONGS.get(a, j) ^ pattern;
            long t = (x - ONES) & ~x & HIGHS;
            if (t != 0) {
                return j + (Long.numberOfTrailingZeros(t) >>> 3);
            }
        }
        byte b = (byte) pattern;
        for (; j < to; j++) {
            if (a[j] == b) {
                return j;
            }
        }
        return to;
    }
}
