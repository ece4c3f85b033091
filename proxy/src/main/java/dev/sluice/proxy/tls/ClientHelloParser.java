package dev.sluice.proxy.tls;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A bounded parser for the first flight of a TLS client: the ClientHello (RFC 8446 section 4.1.2;
 * the same shape in TLS 1.0–1.2, RFC 5246 section 7.4.1.2) and its {@code server_name} extension
 * (RFC 6066 section 3). It reads from a buffer without consuming it, so the bytes can be relayed
 * unchanged afterwards, and it can be called again as more bytes arrive.
 *
 * <p>The handshake message may be fragmented across several TLS records (RFC 8446 section 5.1) and
 * each record across several TCP reads; the parser reassembles the handshake bytes of consecutive
 * {@code handshake} records. It never reads past {@code maxBytes} of input: a ClientHello that does not
 * fit is {@link Kind#TOO_LARGE}. Anything that is not a well-formed ClientHello record layer is
 * {@link Kind#NOT_TLS} (the first byte is not a handshake record of TLS major version 3) or
 * {@link Kind#MALFORMED} (it starts like TLS and then breaks a length or a rule).
 *
 * <p>Only the first {@code host_name} entry of the ServerNameList is returned (RFC 6066 allows one of
 * each type). The name must be 1–255 printable ASCII characters without spaces; anything else is
 * malformed. The name is returned as sent; canonicalising it is the caller's job.
 */
public final class ClientHelloParser {

    /** TLS record content type {@code handshake} (RFC 8446 section 5.1). */
    static final int CONTENT_HANDSHAKE = 22;
    /** Handshake type {@code client_hello} (RFC 8446 section 4). */
    static final int CLIENT_HELLO = 1;
    /** Extension type {@code server_name} (RFC 6066 section 3). */
    static final int EXT_SERVER_NAME = 0;
    /** ServerName name_type {@code host_name}. */
    static final int HOST_NAME = 0;
    /** Largest record payload a TLSPlaintext may carry, 2^14 bytes (RFC 8446 section 5.1). */
    static final int MAX_RECORD_PAYLOAD = 1 << 14;
    private static final int RECORD_HEADER = 5;

    /** What the bytes seen so far are. */
    public enum Kind {
        /** Not enough bytes yet; call again when more arrive. */
        NEED_MORE,
        /** A complete ClientHello with a {@code host_name}; see {@link Result#serverName()}. */
        SNI,
        /** A complete ClientHello without a {@code server_name} extension. */
        NO_SNI,
        /** The first bytes are not a TLS handshake record. */
        NOT_TLS,
        /** A TLS handshake record that breaks the ClientHello's structure. */
        MALFORMED,
        /** The ClientHello does not fit in {@code maxBytes} of input. */
        TOO_LARGE
    }

    /**
     * The outcome of one parse.
     *
     * @param kind what the bytes are
     * @param serverName the SNI host name as sent (for {@link Kind#SNI}), else null
     * @param detail a short reason for {@link Kind#MALFORMED} (safe for logs), else null
     * @param needBytes for {@link Kind#NEED_MORE}: parsing again can only progress once this many bytes
     *     (counted from the start) are available — the end of the record or record header being read;
     *     0 otherwise. Callers skip parses below it, so a client sending one byte at a time costs one
     *     parse per record, not one per byte.
     */
    public record Result(Kind kind, String serverName, String detail, int needBytes) {
        public Result {
            Objects.requireNonNull(kind, "kind");
        }

        static Result of(Kind kind) {
            return new Result(kind, null, null, 0);
        }

        static Result malformed(String detail) {
            return new Result(Kind.MALFORMED, null, detail, 0);
        }

        static Result needMore(int needBytes) {
            return new Result(Kind.NEED_MORE, null, null, needBytes);
        }
    }

    private ClientHelloParser() {
    }

    /**
     * Answers whether {@code first} could start a TLS handshake record (content type 22).
     *
     * @param first the first byte of the stream, 0..255
     */
    public static boolean looksLikeTls(int first) {
        return first == CONTENT_HANDSHAKE;
    }

    /**
     * Parses the readable bytes of {@code in} (reader index untouched).
     *
     * @param in the bytes received so far, from the start of the connection
     * @param maxBytes the most input bytes the ClientHello's records may occupy (&gt; 0)
     * @return the result; {@link Kind#NEED_MORE} when the bytes so far are a valid prefix
     */
    public static Result parse(ByteBuf in, int maxBytes) {
        Objects.requireNonNull(in, "in");
        if (maxBytes <= 0) {
            throw new IllegalArgumentException("maxBytes: " + maxBytes + " (expected: > 0)");
        }
        int start = in.readerIndex();
        int available = in.readableBytes();
        if (available == 0) {
            return Result.needMore(1);
        }
        if (in.getUnsignedByte(start) != CONTENT_HANDSHAKE) {
            return Result.of(Kind.NOT_TLS);
        }
        if (available >= 2 && in.getUnsignedByte(start + 1) != 3) {
            return Result.of(Kind.NOT_TLS);
        }
        // Reassemble the handshake bytes of consecutive handshake records into one buffer (bounded).
        byte[] handshake = null;
        int handshakeLength = 0;
        int needed = -1; // total handshake bytes of the ClientHello (header included), once known
        int offset = 0;
        while (true) {
            if (offset + RECORD_HEADER > available) {
                return offset + RECORD_HEADER > maxBytes ? Result.of(Kind.TOO_LARGE) : Result.needMore(offset + RECORD_HEADER);
            }
            int type = in.getUnsignedByte(start + offset);
            int major = in.getUnsignedByte(start + offset + 1);
            int length = in.getUnsignedShort(start + offset + 3);
            if (type != CONTENT_HANDSHAKE) {
                return Result.malformed("record of type " + type + " before the ClientHello ended");
            }
            if (major != 3) {
                return Result.malformed("record version " + major + "." + in.getUnsignedByte(start + offset + 2));
            }
            if (length == 0) {
                return Result.malformed("empty handshake record");
            }
            if (length > MAX_RECORD_PAYLOAD) {
                return Result.malformed("record of " + length + " bytes (expected: at most 16384)");
            }
            int recordEnd = offset + RECORD_HEADER + length;
            int take = Math.min(recordEnd, available) - (offset + RECORD_HEADER);
            if (needed < 0 && handshakeLength == 0 && take >= 4) {
                // Learn the ClientHello's length first, so that bytes after it in the same record (another
                // handshake message, or anything) never count against maxBytes: the answer must not depend
                // on how many of them have arrived.
                int base = start + offset + RECORD_HEADER;
                if (in.getUnsignedByte(base) != CLIENT_HELLO) {
                    return Result.malformed("first handshake message is of type " + in.getUnsignedByte(base));
                }
                needed = 4 + in.getUnsignedMedium(base + 1);
                if (needed > maxBytes) {
                    return Result.of(Kind.TOO_LARGE);
                }
            }
            int before = handshakeLength;
            if (needed >= 0) {
                take = Math.min(take, needed - handshakeLength);
            }
            if (handshake == null) {
                handshake = new byte[Math.min(maxBytes, available)];
            }
            if (handshakeLength + take > handshake.length) {
                if (handshakeLength + take > maxBytes) {
                    return Result.of(Kind.TOO_LARGE);
                }
                byte[] bigger = new byte[Math.min(maxBytes, Math.max(handshake.length * 2, handshakeLength + take))];
                System.arraycopy(handshake, 0, bigger, 0, handshakeLength);
                handshake = bigger;
            }
            in.getBytes(start + offset + RECORD_HEADER, handshake, handshakeLength, take);
            handshakeLength += take;
            if (needed < 0 && handshakeLength >= 4) {
                if ((handshake[0] & 0xff) != CLIENT_HELLO) {
                    return Result.malformed("first handshake message is of type " + (handshake[0] & 0xff));
                }
                needed = 4 + (((handshake[1] & 0xff) << 16) | ((handshake[2] & 0xff) << 8) | (handshake[3] & 0xff));
                if (needed > maxBytes) {
                    return Result.of(Kind.TOO_LARGE);
                }
            }
            if (needed >= 0 && handshakeLength >= needed) {
                return parseClientHello(handshake, 4, needed);
            }
            if (recordEnd > available) {
                // The record is incomplete: wait for the ClientHello's end (or the record's, while its
                // length is unknown), unless that could never fit.
                int waitFor = needed >= 0 ? Math.min(recordEnd, offset + RECORD_HEADER + (needed - before)) : recordEnd;
                return waitFor > maxBytes ? Result.of(Kind.TOO_LARGE) : Result.needMore(waitFor);
            }
            if (recordEnd >= maxBytes) {
                return Result.of(Kind.TOO_LARGE);
            }
            offset = recordEnd;
        }
    }

    /** Parses the ClientHello body in {@code b[from, end)}. */
    private static Result parseClientHello(byte[] b, int from, int end) {
        Reader r = new Reader(b, from, end);
        if (!r.skip(2 + 32)) { // legacy_version, random
            return Result.malformed("ClientHello too short");
        }
        int sessionId = r.u8();
        if (sessionId < 0 || sessionId > 32 || !r.skip(sessionId)) {
            return Result.malformed("bad legacy_session_id");
        }
        int suites = r.u16();
        if (suites < 2 || (suites & 1) != 0 || !r.skip(suites)) {
            return Result.malformed("bad cipher_suites");
        }
        int compression = r.u8();
        if (compression < 1 || !r.skip(compression)) {
            return Result.malformed("bad legacy_compression_methods");
        }
        if (r.remaining() == 0) {
            return Result.of(Kind.NO_SNI); // no extensions at all (TLS 1.0-1.2 allow that)
        }
        int extensionsLength = r.u16();
        if (extensionsLength < 0 || extensionsLength != r.remaining()) {
            return Result.malformed("extensions length does not match the ClientHello");
        }
        String name = null;
        boolean seen = false;
        while (r.remaining() > 0) {
            int type = r.u16();
            int length = r.u16();
            if (type < 0 || length < 0 || length > r.remaining()) {
                return Result.malformed("extension overruns the ClientHello");
            }
            if (type != EXT_SERVER_NAME) {
                r.skip(length);
                continue;
            }
            if (seen) {
                return Result.malformed("two server_name extensions");
            }
            seen = true;
            Reader ext = new Reader(b, r.position(), r.position() + length);
            r.skip(length);
            if (length == 0) {
                continue; // an empty server_name (as a server sends it) carries no name
            }
            int listLength = ext.u16();
            if (listLength < 0 || listLength != ext.remaining() || listLength == 0) {
                return Result.malformed("bad server_name list length");
            }
            while (ext.remaining() > 0) {
                int nameType = ext.u8();
                int nameLength = ext.u16();
                if (nameType < 0 || nameLength < 0 || nameLength > ext.remaining()) {
                    return Result.malformed("server_name entry overruns the list");
                }
                if (nameType == HOST_NAME && name == null) {
                    if (nameLength == 0 || nameLength > 255) {
                        return Result.malformed("host_name of " + nameLength + " bytes");
                    }
                    for (int i = 0; i < nameLength; i++) {
                        int c = b[ext.position() + i] & 0xff;
                        if (c <= 0x20 || c >= 0x7f) {
                            return Result.malformed("host_name with a byte outside printable ASCII");
                        }
                    }
                    name = new String(b, ext.position(), nameLength, StandardCharsets.US_ASCII);
                }
                ext.skip(nameLength);
            }
        }
        return name == null ? Result.of(Kind.NO_SNI) : new Result(Kind.SNI, name, null, 0);
    }

    /** Big-endian reads over {@code b[pos, end)}; every read returns -1 / false past the end. */
    private static final class Reader {
        private final byte[] b;
        private final int end;
        private int pos;

        Reader(byte[] b, int pos, int end) {
            this.b = b;
            this.pos = pos;
            this.end = end;
        }

        int remaining() {
            return end - pos;
        }

        int position() {
            return pos;
        }

        int u8() {
            if (pos + 1 > end) {
                pos = end;
                return -1;
            }
            return b[pos++] & 0xff;
        }

        int u16() {
            if (pos + 2 > end) {
                pos = end;
                return -1;
            }
            int v = ((b[pos] & 0xff) << 8) | (b[pos + 1] & 0xff);
            pos += 2;
            return v;
        }

        boolean skip(int n) {
            if (n < 0 || pos + n > end) {
                pos = end;
                return false;
            }
            pos += n;
            return true;
        }
    }
}
