package dev.sluice.rules.redact;

import java.util.Arrays;

/**
 * The matches a {@link StreamingRedactor} has found and not yet released: absolute raw offsets
 * {@code [start, end)} of the body with the detector index, sorted by start and never overlapping (a
 * match that overlaps others is merged with them, under the lowest detector index). Owns its arrays;
 * single-threaded, one per redactor.
 */
final class PendingMatches {

    private long[] start = new long[8];
    private long[] end = new long[8];
    private int[] det = new int[8];
    private int count;

    /** Adds {@code [s, e)} of detector {@code d}, merged with every pending match it overlaps. */
    void add(long s, long e, int d) {
        int i = 0;
        while (i < count && end[i] <= s) {
            i++;
        }
        // merge every pending match overlapping [s, e)
        int j = i;
        while (j < count && start[j] < e) {
            s = Math.min(s, start[j]);
            e = Math.max(e, end[j]);
            d = Math.min(d, det[j]);
            j++;
        }
        int removed = j - i;
        if (removed == 0) {
            if (count == start.length) {
                start = Arrays.copyOf(start, count * 2);
                end = Arrays.copyOf(end, count * 2);
                det = Arrays.copyOf(det, count * 2);
            }
            System.arraycopy(start, i, start, i + 1, count - i);
            System.arraycopy(end, i, end, i + 1, count - i);
            System.arraycopy(det, i, det, i + 1, count - i);
            count++;
        } else if (removed > 1) {
            System.arraycopy(start, j, start, i + 1, count - j);
            System.arraycopy(end, j, end, i + 1, count - j);
            System.arraycopy(det, j, det, i + 1, count - j);
            count -= removed - 1;
        }
        start[i] = s;
        end[i] = e;
        det[i] = d;
    }

    /** Returns the number of pending matches. */
    int count() {
        return count;
    }

    /** Returns the absolute raw start of the first pending match ({@code count() > 0}). */
    long firstStart() {
        return start[0];
    }

    /** Returns the absolute raw end (exclusive) of the first pending match ({@code count() > 0}). */
    long firstEnd() {
        return end[0];
    }

    /** Returns the detector index of pending match {@code i}. */
    int detector(int i) {
        return det[i];
    }

    /** Drops the first pending match (it was released). */
    void removeFirst() {
        count--;
        System.arraycopy(start, 1, start, 0, count);
        System.arraycopy(end, 1, end, 0, count);
        System.arraycopy(det, 1, det, 0, count);
    }

    /** Returns the bytes of the arrays held (capacity). */
    long retainedBytes() {
        return start.length * 20L;
    }
}
