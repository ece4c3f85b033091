package dev.sluice.rules.redflag;

import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The SIMD half of {@link LiteralGate}: classifies {@value #LANES} characters at a time
 * ({@code jdk.incubator.vector}, 256-bit vectors of 16-bit lanes). For a block it answers two bit masks,
 * bit {@code j} standing for character {@code from + j}: where a character is outside the base64 alphabet
 * (a run of {@code encoded_shell} ends there) and where a literal could start (its lowercase form is the
 * first character of some literal, or it is not ASCII, which the scalar code then reads as before). Only
 * loaded when the module is present ({@link #supported()}); {@link LiteralGate} falls back to its scalar
 * loop otherwise.
 */
final class GateVectors {

    private static final VectorSpecies<Short> SPECIES = ShortVector.SPECIES_256;
    /** Characters per block. */
    static final int LANES = 16;

    /** The distinct lowercase ASCII first characters of the literals. */
    private final short[] firsts;

    GateVectors(boolean[] first) {
        int count = 0;
        for (boolean f : first) {
            count += f ? 1 : 0;
        }
        firsts = new short[count];
        int k = 0;
        for (int c = 0; c < first.length; c++) {
            if (first[c]) {
                firsts[k++] = (short) c;
            }
        }
    }

    /**
     * Scans {@code a[0, n)} block by block for {@code gate}: a run can only end long enough at the first
     * break of a block (two breaks inside one block are fewer than 16 apart), and only candidate
     * positions are compared. Returns the index where the scalar tail starts (high 32 bits) and the last
     * break seen (low 32 bits; {@code last} if none).
     */
    long scan(LiteralGate gate, Gated.Hits[] open, char[] a, int n, boolean runs, int last) {
        int i = 0;
        widen(a, n);
        short[] s = shorts;
        for (; i + LANES <= n; i += LANES) {
            ShortVector v = ShortVector.fromArray(SPECIES, s, i);
            if (runs) {
                long breaks = breaks(v);
                if (breaks != 0) {
                    int firstBreak = i + Long.numberOfTrailingZeros(breaks);
                    if (firstBreak - last > LiteralGate.MIN_RUN) {
                        gate.run(open, a, last + 1, firstBreak);
                    }
                    last = i + 63 - Long.numberOfLeadingZeros(breaks);
                }
            }
            for (long cand = candidates(v); cand != 0; cand &= cand - 1) {
                gate.candidate(open, a, n, i + Long.numberOfTrailingZeros(cand));
            }
        }
        return ((long) i << 32) | (last & 0xffffffffL);
    }

    /** Whether this JVM runs 256-bit short vectors (and has the incubator module). */
    static boolean supported() {
        return ShortVector.SPECIES_PREFERRED.vectorBitSize() >= 256;
    }

    /** Bit j: {@code a[from + j]} is not a base64-alphabet character (ASCII letters, digits, '+', '/'). */
    long breaks(ShortVector v) {
        VectorMask<Short> upper = v.compare(VectorOperators.GE, (short) 'A').and(v.compare(VectorOperators.LE, (short) 'Z'));
        VectorMask<Short> lower = v.compare(VectorOperators.GE, (short) 'a').and(v.compare(VectorOperators.LE, (short) 'z'));
        VectorMask<Short> digit = v.compare(VectorOperators.GE, (short) '0').and(v.compare(VectorOperators.LE, (short) '9'));
        VectorMask<Short> b64 = upper.or(lower).or(digit)
                .or(v.compare(VectorOperators.EQ, (short) '+')).or(v.compare(VectorOperators.EQ, (short) '/'));
        return bits(ZERO.blend(ONE, b64.not()));
    }

    /**
     * The batch's characters as shorts: on JDK 17 {@code ShortVector.fromCharArray} is not intrinsic (it
     * loads lane by lane), while {@code fromArray} on a {@code short[]} is, and this copy loop is
     * vectorised by the JIT.
     */
    private short[] shorts = new short[0];

    private void widen(char[] a, int n) {
        if (shorts.length < n) {
            shorts = new short[Math.max(n, 2 * shorts.length)];
        }
        short[] s = shorts;
        for (int i = 0; i < n; i++) {
            s[i] = (short) a[i];
        }
    }

    /**
     * Bit j: a literal could start at {@code a[from + j]}: its ASCII lowercase form is a first character,
     * or it is not ASCII (compare: signed shorts, so characters from U+8000 are negative).
     */
    long candidates(ShortVector v) {
        VectorMask<Short> nonAscii = v.compare(VectorOperators.GT, (short) 127).or(v.compare(VectorOperators.LT, (short) 0));
        VectorMask<Short> upper = v.compare(VectorOperators.GE, (short) 'A').and(v.compare(VectorOperators.LE, (short) 'Z'));
        ShortVector lc = v.lanewise(VectorOperators.OR, (short) 0x20, upper);
        VectorMask<Short> hit = nonAscii;
        for (short f : firsts) {
            hit = hit.or(lc.compare(VectorOperators.EQ, f));
        }
        return bits(ZERO.blend(ONE, hit));
    }

    private static final ShortVector ZERO = ShortVector.zero(SPECIES);
    private static final ShortVector ONE = ShortVector.broadcast(SPECIES, (short) 1);
    private static final java.lang.invoke.VarHandle WORDS =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);
    private final byte[] bytes = new byte[2 * LANES];

    /**
     * Bit j set when lane j of {@code v} (0 or 1) is 1: stored and read back as four longs (on JDK 17 a
     * vector store is cheap while {@code VectorMask.toLong()} is not intrinsic).
     */
    private long bits(ShortVector v) {
        v.reinterpretAsBytes().intoArray(bytes, 0);
        long out = 0;
        for (int w = 0; w < 4; w++) {
            long x = (long) WORDS.get(bytes, 8 * w);
            // lanes are 0x0001 or 0x0000 (little-endian): gather the four low bits
            long four = ((x & 0x0001000100010001L) * 0x0001000200040008L) >>> 48 & 0xF;
            out |= four << (4 * w);
        }
        return out;
    }
}
