package dev.sluice.rules.redact;

import java.util.Arrays;

/**
 * The bytes a {@link StreamingRedactor} releases during one {@code feed} or {@code finish} call: raw
 * bytes no match can still cover, and replacements. Owns its array (grown as needed, never shrunk);
 * {@link #take()} hands out a copy and empties it. Single-threaded, one per redactor.
 */
final class OutputBuffer {

    private static final byte[] EMPTY = new byte[0];

    private byte[] out;
    private int len;

    OutputBuffer(int capacity) {
        this.out = new byte[capacity];
    }

    /** Forgets what was written (the start of a call). */
    void reset() {
        len = 0;
    }

    /** Appends {@code src[off, off + n)}. */
    void append(byte[] src, int off, int n) {
        ensure(n);
        System.arraycopy(src, off, out, len, n);
        len += n;
    }

    /** Appends all of {@code b}. */
    void append(byte[] b) {
        append(b, 0, b.length);
    }

    /** Returns what was written since the last {@link #reset()} or take, as a new array (or a shared empty one), and empties the buffer. */
    byte[] take() {
        if (len == 0) {
            return EMPTY;
        }
        byte[] r = Arrays.copyOf(out, len);
        len = 0;
        return r;
    }

    /** Returns the bytes of the array held (capacity). */
    int capacity() {
        return out.length;
    }

    private void ensure(int more) {
        if (len + more > out.length) {
            out = Arrays.copyOf(out, Math.max(out.length * 2, len + more));
        }
    }
}
