package dev.sluice.rules.redact;

import java.io.ByteArrayOutputStream;
import java.util.Locale;
import java.util.Objects;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import org.jspecify.annotations.Nullable;

/**
 * Undoes a request body's {@code Content-Encoding} as it streams, with a cap on the decoded size, so the
 * redactor sees the real bytes and a compressed bomb never expands past the limit. Pure
 * {@code java.util.zip}. The decoded body is sent on identity-encoded (the caller removes
 * {@code Content-Encoding}).
 *
 * <table>
 *   <caption>Codings (RFC 9110 section 8.4.1)</caption>
 *   <tr><th>{@code Content-Encoding}</th><th>result</th></tr>
 *   <tr><td>absent, empty, {@code identity}</td><td>{@link Coding#IDENTITY}: bytes as they are</td></tr>
 *   <tr><td>{@code gzip}, {@code x-gzip}</td><td>{@link Coding#GZIP}: RFC 1952 members, one or more
 *       concatenated; CRC32 and length of each checked</td></tr>
 *   <tr><td>{@code deflate}</td><td>{@link Coding#DEFLATE}: zlib (RFC 1950) as the standard says, or raw
 *       deflate (RFC 1951) as some clients send, told apart by the zlib header check</td></tr>
 *   <tr><td>{@code br}, {@code zstd}, {@code compress}, {@code x-compress}, anything else, or more than
 *       one coding</td><td>{@link UnsupportedContentEncodingException} → 415
 *       {@code unsupported_encoding}</td></tr>
 * </table>
 * Decoded output beyond the cap → {@link BodyTooLargeException} → 413 {@code body_too_large}; corrupt
 * compressed data → {@link MalformedBodyException} → 400 {@code malformed_request}.
 */
public final class BodyDecoding {

    /** A content coding Sluice can undo. */
    public enum Coding {
        IDENTITY, GZIP, DEFLATE
    }

    /** Receives decoded bytes, in pieces of at most 64 KiB. */
    @FunctionalInterface
    public interface Sink {
        /** Takes {@code b[off, off + len)}; the array is reused after the call returns. */
        void accept(byte[] b, int off, int len) throws BodyTooLargeException;
    }

    private BodyDecoding() {
    }

    /**
     * Reads a {@code Content-Encoding} field value (all field lines joined with commas).
     *
     * @param contentEncoding the value, or null when the header is absent
     * @throws UnsupportedContentEncodingException for a coding Sluice cannot undo, or several codings
     */
    public static Coding parse(@Nullable String contentEncoding) throws UnsupportedContentEncodingException {
        if (contentEncoding == null) {
            return Coding.IDENTITY;
        }
        Coding result = Coding.IDENTITY;
        int codings = 0;
        for (String part : contentEncoding.split(",", -1)) {
            String c = part.strip().toLowerCase(Locale.ROOT);
            if (c.isEmpty() || c.equals("identity")) {
                continue;
            }
            codings++;
            switch (c) {
                case "gzip":
                case "x-gzip":
                    result = Coding.GZIP;
                    break;
                case "deflate":
                    result = Coding.DEFLATE;
                    break;
                default:
                    throw new UnsupportedContentEncodingException("Content-Encoding: " + shorten(c)
                            + " (expected: gzip, deflate or identity)");
            }
        }
        if (codings > 1) {
            throw new UnsupportedContentEncodingException("Content-Encoding: " + codings
                    + " codings applied in a row (expected: at most one of gzip, deflate)");
        }
        return result;
    }

    private static String shorten(String s) {
        String t = s.length() > 32 ? s.substring(0, 32) + "..." : s;
        StringBuilder b = new StringBuilder();
        for (char ch : t.toCharArray()) {
            b.append(ch >= 0x20 && ch < 0x7f ? ch : '?');
        }
        return b.toString();
    }

    /**
     * Starts a streaming decoder.
     *
     * @param maxOutputBytes the largest decoded body accepted, in bytes
     */
    public static Decoder decoder(Coding coding, long maxOutputBytes) {
        Objects.requireNonNull(coding, "coding");
        if (maxOutputBytes < 0) {
            throw new IllegalArgumentException("maxOutputBytes: " + maxOutputBytes + " (expected: >= 0)");
        }
        return new Decoder(coding, maxOutputBytes);
    }

    /**
     * Decodes a whole body at once (tests, small bodies).
     *
     * @throws UnsupportedContentEncodingException see {@link #parse}
     * @throws BodyTooLargeException when the decoded body exceeds {@code maxOutputBytes}
     * @throws MalformedBodyException on corrupt or truncated data
     */
    public static byte[] decodeAll(String contentEncoding, byte[] body, long maxOutputBytes)
            throws UnsupportedContentEncodingException, BodyTooLargeException, MalformedBodyException {
        Decoder d = decoder(parse(contentEncoding), maxOutputBytes);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Sink sink = out::write;
        d.feed(body, 0, body.length, sink);
        d.finish(sink);
        return out.toByteArray();
    }

    /**
     * Corrupt or truncated compressed body; the proxy answers 400 {@code malformed_request}.
     */
    public static final class MalformedBodyException extends Exception {
        private static final long serialVersionUID = 1L;

        public MalformedBodyException(String message) {
            super(message);
        }
    }

    /**
     * One body's streaming decoder. Not thread-safe. Memory: a 64 KiB output buffer, the inflater's
     * 32 KiB window and a gzip header of at most 64 KiB of optional fields.
     */
    public static final class Decoder {
        private static final int OUT = 64 * 1024;
        private static final int MAX_HEADER = 64 * 1024;

        private final Coding coding;
        private final long max;
        private final byte[] buf;
        private Inflater inflater;
        private final CRC32 crc = new CRC32();
        private long produced;
        private long memberBytes;
        // gzip framing state
        private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
        private int stage; // 0 header, 1 body, 2 trailer, 3 done (deflate)
        private boolean failed;

        private Decoder(Coding coding, long max) {
            this.coding = coding;
            this.max = max;
            this.buf = coding == Coding.IDENTITY ? null : new byte[OUT];
        }

        /** Returns the decoded bytes produced so far. */
        public long decodedBytes() {
            return produced;
        }

        /**
         * Decodes {@code in[off, off + len)} and hands every decoded byte to {@code sink}.
         *
         * @throws BodyTooLargeException when the decoded total exceeds the cap (the sink may throw it too)
         * @throws MalformedBodyException on corrupt data
         */
        public void feed(byte[] in, int off, int len, Sink sink) throws BodyTooLargeException, MalformedBodyException {
            Objects.checkFromIndexSize(off, len, in.length);
            if (failed) {
                throw new IllegalStateException("feed after failure");
            }
            try {
                if (coding == Coding.IDENTITY) {
                    count(len);
                    sink.accept(in, off, len);
                    return;
                }
                if (coding == Coding.DEFLATE) {
                    feedDeflate(in, off, len, sink);
                } else {
                    feedGzip(in, off, len, sink);
                }
            } catch (BodyTooLargeException | MalformedBodyException | RuntimeException e) {
                failed = true;
                end();
                throw e;
            }
        }

        /**
         * Ends the body.
         *
         * @throws MalformedBodyException when the compressed data is incomplete
         */
        public void finish(Sink sink) throws MalformedBodyException, BodyTooLargeException {
            try {
                if (coding == Coding.IDENTITY || failed) {
                    return;
                }
                if (coding == Coding.DEFLATE) {
                    if (inflater == null ? pending.size() > 0 : stage != 3) {
                        throw new MalformedBodyException("deflate body: truncated");
                    }
                } else if (stage != 0 || pending.size() > 0) {
                    // an empty body is accepted as empty; anything else must end on a member boundary
                    throw new MalformedBodyException("gzip body: truncated");
                }
            } finally {
                end();
            }
        }

        private void end() {
            if (inflater != null) {
                inflater.end();
                inflater = null;
            }
        }

        private void count(long n) throws BodyTooLargeException {
            produced += n;
            if (produced > max) {
                throw new BodyTooLargeException(max);
            }
        }

        private void feedDeflate(byte[] in, int off, int len, Sink sink) throws BodyTooLargeException, MalformedBodyException {
            if (stage == 3) {
                if (len > 0) {
                    throw new MalformedBodyException("deflate body: data after the end of the stream");
                }
                return;
            }
            if (inflater == null) {
                // need two bytes to tell zlib from raw deflate
                pending.write(in, off, len);
                if (pending.size() < 2) {
                    return;
                }
                byte[] head = pending.toByteArray();
                pending.reset();
                int cmf = head[0] & 0xff;
                int flg = head[1] & 0xff;
                boolean zlib = (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
                inflater = new Inflater(!zlib);
                in = head;
                off = 0;
                len = head.length;
            }
            inflate(in, off, len, sink, false);
            if (inflater.finished()) {
                if (inflater.getRemaining() > 0) {
                    throw new MalformedBodyException("deflate body: data after the end of the stream");
                }
                stage = 3;
            }
        }

        private void feedGzip(byte[] in, int off, int len, Sink sink) throws BodyTooLargeException, MalformedBodyException {
            int end = off + len;
            int p = off;
            while (p < end) {
                if (stage == 0) {
                    int take = Math.min(end - p, MAX_HEADER + 16 - pending.size());
                    pending.write(in, p, take);
                    p += take;
                    byte[] h = pending.toByteArray();
                    int headerLen = gzipHeaderLength(h);
                    if (headerLen < 0) {
                        if (h.length > MAX_HEADER) {
                            throw new MalformedBodyException("gzip body: header longer than " + MAX_HEADER + " bytes");
                        }
                        continue; // need more
                    }
                    pending.reset();
                    // bytes after the header go back to the body stage
                    int extra = h.length - headerLen;
                    p -= extra;
                    if (p < off) {
                        // cannot happen: take <= bytes of this call
                        throw new IllegalStateException();
                    }
                    if (inflater == null) {
                        inflater = new Inflater(true);
                    } else {
                        inflater.reset();
                    }
                    crc.reset();
                    memberBytes = 0;
                    stage = 1;
                } else if (stage == 1) {
                    int used = inflate(in, p, end - p, sink, true);
                    p += used;
                    if (inflater.finished()) {
                        stage = 2;
                    }
                } else {
                    int take = Math.min(end - p, 8 - pending.size());
                    pending.write(in, p, take);
                    p += take;
                    if (pending.size() == 8) {
                        byte[] t = pending.toByteArray();
                        pending.reset();
                        long crcValue = le32(t, 0);
                        long size = le32(t, 4);
                        if (crcValue != crc.getValue() || size != (memberBytes & 0xffffffffL)) {
                            throw new MalformedBodyException("gzip body: CRC32 or length mismatch");
                        }
                        stage = 0;
                    }
                }
            }
        }

        /** Inflates input; returns how many input bytes were consumed (for gzip, the rest is the trailer). */
        private int inflate(byte[] in, int off, int len, Sink sink, boolean gzip) throws BodyTooLargeException, MalformedBodyException {
            inflater.setInput(in, off, len);
            try {
                while (!inflater.finished()) {
                    int n = inflater.inflate(buf);
                    if (n > 0) {
                        count(n);
                        if (gzip) {
                            crc.update(buf, 0, n);
                            memberBytes += n;
                        }
                        sink.accept(buf, 0, n);
                    } else if (inflater.needsInput()) {
                        break;
                    } else if (inflater.needsDictionary()) {
                        throw new MalformedBodyException("deflate body: needs a preset dictionary");
                    }
                }
            } catch (DataFormatException e) {
                throw new MalformedBodyException((gzip ? "gzip" : "deflate") + " body: corrupt data");
            }
            return len - inflater.getRemaining();
        }

        /** Returns the length of the gzip member header in {@code h}, or -1 when more bytes are needed. */
        private static int gzipHeaderLength(byte[] h) throws MalformedBodyException {
            if (h.length >= 1 && (h[0] & 0xff) != 0x1f || h.length >= 2 && (h[1] & 0xff) != 0x8b) {
                throw new MalformedBodyException("gzip body: not gzip data (bad magic bytes)");
            }
            if (h.length >= 3 && h[2] != 8) {
                throw new MalformedBodyException("gzip body: compression method " + h[2] + " (expected: 8, deflate)");
            }
            if (h.length < 10) {
                return -1;
            }
            int flags = h[3] & 0xff;
            int p = 10;
            if ((flags & 4) != 0) { // FEXTRA
                if (h.length < p + 2) {
                    return -1;
                }
                p += 2 + ((h[p] & 0xff) | (h[p + 1] & 0xff) << 8);
            }
            for (int bit : new int[] {8, 16}) { // FNAME, FCOMMENT: zero-terminated
                if ((flags & bit) != 0) {
                    while (true) {
                        if (p >= h.length) {
                            return -1;
                        }
                        if (h[p++] == 0) {
                            break;
                        }
                    }
                }
            }
            if ((flags & 2) != 0) { // FHCRC
                p += 2;
            }
            return p <= h.length ? p : -1;
        }

        private static long le32(byte[] b, int at) {
            return (b[at] & 0xffL) | (b[at + 1] & 0xffL) << 8 | (b[at + 2] & 0xffL) << 16 | (b[at + 3] & 0xffL) << 24;
        }
    }
}
