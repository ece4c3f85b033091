package dev.sluice.proxy.http;

import org.jspecify.annotations.Nullable;
import io.netty.buffer.ByteBuf;
import java.util.Locale;
import java.util.Set;

/**
 * A strict reader of the chunked transfer coding (RFC 9112 section 7.1), fed the raw bytes of one
 * chunked body as the request decoder consumes them, which says whether the framing is exactly what
 * the grammar allows:
 * <pre>
 *   chunked-body   = *chunk last-chunk trailer-section CRLF
 *   chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   chunk-size     = 1*HEXDIG            (here: at most {@value #MAX_SIZE_DIGITS} digits)
 *   chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 *   trailer-section = *( field-line CRLF )
 * </pre>
 * Refused, each with a short detail: a second number or any character that is not a hex digit where
 * the size is ({@code 0x5}, {@code +5}, {@code -5}, {@code 5 6}), an empty size, more than
 * {@value #MAX_SIZE_DIGITS} digits (leading zeros count), a bare LF or a bare CR anywhere a CRLF
 * belongs, control characters in an extension, a chunk line over {@value #MAX_LINE_BYTES} bytes, chunk
 * data not followed by CRLF; in the trailer section: obs-fold (a line starting with SP or HTAB), a
 * field name that is not a token or is followed by whitespace, control characters in a value, and
 * fields that change framing, routing or identity ({@link #FORBIDDEN_TRAILERS}, RFC 9110 section
 * 6.5.1). This reader never copies or modifies bytes; it only looks at them.
 *
 * <p>Not thread-safe: one instance per connection, used on its event loop.
 */
final class ChunkedFraming {

    /** The most hex digits a chunk-size may have (8 digits reach 4 GiB; the decoder caps at 2 GiB). */
    static final int MAX_SIZE_DIGITS = 8;
    /** The longest chunk-size line (size and extensions), in bytes, without its CRLF. */
    static final int MAX_LINE_BYTES = 4_096;

    /** Trailer fields refused because a recipient could act on them as if they were header fields. */
    static final Set<String> FORBIDDEN_TRAILERS = Set.of("content-length", "transfer-encoding", "host", "trailer",
            "te", "connection", "keep-alive", "upgrade", "proxy-connection", "proxy-authorization", "authorization",
            "content-encoding", "content-type", "content-range", "expect", "range", "cookie");

    private enum State {
        IDLE, SIZE, SIZE_BWS, EXT_NAME_START, EXT_NAME, EXT_AFTER_NAME, EXT_VALUE_START, EXT_TOKEN,
        EXT_QUOTED, EXT_QUOTED_ESCAPE, EXT_AFTER_VALUE, SIZE_LF, DATA, DATA_CR, DATA_LF,
        TRAILER_START, TRAILER_NAME, TRAILER_VALUE, TRAILER_LF, FINAL_LF, DONE
    }

    private final int maxTrailerBytes;
    private State state = State.IDLE;
    private int digits;
    private long size;
    private int lineBytes;
    private int trailerBytes;
    private final StringBuilder name = new StringBuilder();
    private String error;

    /** @param maxTrailerBytes the largest trailer section accepted, in bytes */
    ChunkedFraming(int maxTrailerBytes) {
        this.maxTrailerBytes = maxTrailerBytes;
    }

    /** Starts reading a new chunked body (its first byte is a chunk-size). */
    void start() {
        state = State.SIZE;
        digits = 0;
        size = 0;
        lineBytes = 0;
        trailerBytes = 0;
        name.setLength(0);
        error = null;
    }

    /** Answers whether a chunked body is being read (started and neither done nor failed). */
    boolean active() {
        return state != State.IDLE && state != State.DONE && error == null;
    }

    /** Returns what was wrong, or null while the framing is valid. */
    @Nullable String error() {
        return error;
    }

    /**
     * Reads {@code buf}'s bytes in {@code [from, to)} (absolute indexes; reader and writer index are
     * untouched). Stops at the end of the body or at the first error.
     *
     * @return true while the framing is valid
     */
    boolean feed(ByteBuf buf, int from, int to) {
        int i = from;
        while (i < to && active()) {
            if (state == State.DATA) {
                int n = (int) Math.min(size, to - i);
                i += n;
                size -= n;
                if (size == 0) {
                    state = State.DATA_CR;
                }
                continue;
            }
            step(buf.getByte(i) & 0xff);
            i++;
        }
        return error == null;
    }

    private void step(int b) {
        switch (state) {
            case SIZE -> {
                int digit = Character.digit(b, 16);
                if (digit >= 0 && b < 0x80) {
                    if (++digits > MAX_SIZE_DIGITS) {
                        fail("chunk-size longer than " + MAX_SIZE_DIGITS + " hex digits");
                        return;
                    }
                    size = size * 16 + digit;
                    lineBytes++;
                } else if (digits == 0) {
                    fail("chunk-size does not start with a hex digit");
                } else if (b == ' ' || b == '\t') {
                    state = State.SIZE_BWS;
                    lineBytes++;
                } else if (b == ';') {
                    state = State.EXT_NAME_START;
                    lineBytes++;
                } else if (b == '\r') {
                    state = State.SIZE_LF;
                } else if (b == '\n') {
                    fail("bare LF after a chunk-size");
                } else {
                    fail("chunk-size is not 1*HEXDIG");
                }
            }
            case SIZE_BWS -> {
                lineBytes++;
                if (b == ';') {
                    state = State.EXT_NAME_START;
                } else if (b != ' ' && b != '\t') {
                    fail("whitespace in a chunk-size line not followed by a chunk extension");
                }
            }
            case EXT_NAME_START, EXT_NAME, EXT_AFTER_NAME, EXT_VALUE_START, EXT_TOKEN, EXT_QUOTED,
                 EXT_QUOTED_ESCAPE, EXT_AFTER_VALUE -> extension(b);
            case SIZE_LF -> {
                if (b != '\n') {
                    fail("CR not followed by LF in a chunk-size line");
                } else if (size == 0) {
                    state = State.TRAILER_START;
                } else {
                    state = State.DATA;
                }
                lineBytes = 0;
                digits = 0;
            }
            case DATA_CR -> {
                if (b != '\r') {
                    fail(b == '\n' ? "bare LF after chunk data" : "chunk data longer than its chunk-size");
                } else {
                    state = State.DATA_LF;
                }
            }
            case DATA_LF -> {
                if (b != '\n') {
                    fail("CR not followed by LF after chunk data");
                } else {
                    state = State.SIZE;
                    size = 0;
                }
            }
            case TRAILER_START -> {
                countTrailer();
                if (b == '\r') {
                    state = State.FINAL_LF;
                } else if (b == '\n') {
                    fail("bare LF in the trailer section");
                } else if (b == ' ' || b == '\t') {
                    fail("obs-fold in the trailer section");
                } else if (isTchar(b)) {
                    name.setLength(0);
                    name.append((char) b);
                    state = State.TRAILER_NAME;
                } else {
                    fail("trailer field name is not a token");
                }
            }
            case TRAILER_NAME -> {
                countTrailer();
                if (b == ':') {
                    String field = name.toString().toLowerCase(Locale.ROOT);
                    if (FORBIDDEN_TRAILERS.contains(field)) {
                        fail("trailer field " + field + " is not allowed in a trailer");
                    } else {
                        state = State.TRAILER_VALUE;
                    }
                } else if (isTchar(b)) {
                    if (name.length() < 256) {
                        name.append((char) b);
                    }
                } else {
                    fail("trailer field name is not a token");
                }
            }
            case TRAILER_VALUE -> {
                countTrailer();
                if (b == '\r') {
                    state = State.TRAILER_LF;
                } else if (b == '\n') {
                    fail("bare LF in the trailer section");
                } else if ((b < 0x20 && b != '\t') || b == 0x7f) {
                    fail("control character in a trailer field value");
                }
            }
            case TRAILER_LF -> {
                countTrailer();
                if (b != '\n') {
                    fail("CR not followed by LF in the trailer section");
                } else {
                    state = State.TRAILER_START;
                }
            }
            case FINAL_LF -> {
                if (b != '\n') {
                    fail("CR not followed by LF at the end of the chunked body");
                } else {
                    state = State.DONE;
                }
            }
            default -> throw new IllegalStateException("state: " + state);
        }
    }

    /**
     * One byte of the chunk extensions: {@code *( BWS ";" BWS token [ BWS "=" BWS ( token /
     * quoted-string ) ] )} up to the CR (RFC 9112 section 7.1.1, RFC 9110 section 5.6).
     */
    private void extension(int b) {
        if (b == '\n') {
            fail("bare LF in a chunk-size line");
            return;
        }
        if (++lineBytes > MAX_LINE_BYTES) {
            fail("chunk-size line longer than " + MAX_LINE_BYTES + " bytes");
            return;
        }
        boolean bws = b == ' ' || b == '\t';
        switch (state) {
            case EXT_NAME_START -> {
                if (isTchar(b)) {
                    state = State.EXT_NAME;
                } else if (!bws) {
                    fail("chunk extension without a name");
                }
            }
            case EXT_NAME -> {
                if (b == '\r') {
                    state = State.SIZE_LF;
                } else if (b == ';') {
                    state = State.EXT_NAME_START;
                } else if (b == '=') {
                    state = State.EXT_VALUE_START;
                } else if (bws) {
                    state = State.EXT_AFTER_NAME;
                } else if (!isTchar(b)) {
                    fail("chunk extension name is not a token");
                }
            }
            case EXT_AFTER_NAME -> {
                if (b == ';') {
                    state = State.EXT_NAME_START;
                } else if (b == '=') {
                    state = State.EXT_VALUE_START;
                } else if (!bws) {
                    fail("unexpected byte after a chunk extension name");
                }
            }
            case EXT_VALUE_START -> {
                if (b == '"') {
                    state = State.EXT_QUOTED;
                } else if (isTchar(b)) {
                    state = State.EXT_TOKEN;
                } else if (!bws) {
                    fail("chunk extension value is neither a token nor a quoted-string");
                }
            }
            case EXT_TOKEN -> {
                if (b == '\r') {
                    state = State.SIZE_LF;
                } else if (b == ';') {
                    state = State.EXT_NAME_START;
                } else if (bws) {
                    state = State.EXT_AFTER_VALUE;
                } else if (!isTchar(b)) {
                    fail("chunk extension value is not a token");
                }
            }
            case EXT_QUOTED -> {
                if (b == '"') {
                    state = State.EXT_AFTER_VALUE;
                } else if (b == '\\') {
                    state = State.EXT_QUOTED_ESCAPE;
                } else if ((b < 0x20 && b != '\t') || b == 0x7f) {
                    fail("control character in a chunk extension");
                }
            }
            case EXT_QUOTED_ESCAPE -> {
                if ((b < 0x20 && b != '\t') || b == 0x7f) {
                    fail("control character in a chunk extension");
                } else {
                    state = State.EXT_QUOTED;
                }
            }
            case EXT_AFTER_VALUE -> {
                if (b == '\r') {
                    state = State.SIZE_LF;
                } else if (b == ';') {
                    state = State.EXT_NAME_START;
                } else if (!bws) {
                    fail("unexpected byte after a chunk extension value");
                }
            }
            default -> throw new IllegalStateException("state: " + state);
        }
    }

    private void countTrailer() {
        if (++trailerBytes > maxTrailerBytes) {
            fail("trailer section over " + maxTrailerBytes + " bytes");
        }
    }

    private void fail(String detail) {
        if (error == null) {
            error = detail;
        }
    }

    /** RFC 9110 section 5.6.2 tchar. */
    private static boolean isTchar(int b) {
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
                || "!#$%&'*+-.^_`|~".indexOf(b) >= 0;
    }
}
