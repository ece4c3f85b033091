package dev.sluice.proxy.intercept;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The ALPN protocols a ClientHello offers (RFC 7301 section 3.1), and the alert that refuses them
 * when none is one Sluice speaks (section 3.2: {@code no_application_protocol}, fatal).
 */
final class AlpnOffer {

    /** The ALPN extension's type (RFC 7301 section 3.1). */
    static final int EXTENSION_TYPE = 16;
    /** The {@code no_application_protocol} alert description (RFC 7301 section 3.2). */
    static final int NO_APPLICATION_PROTOCOL = 120;

    private static final int CONTENT_TYPE_ALERT = 21;
    private static final int LEVEL_FATAL = 2;

    private AlpnOffer() {
    }

    /**
     * Returns the protocol names of the ALPN extension of a ClientHello, in the client's order, or
     * empty when the ClientHello has no ALPN extension (or cannot be read far enough: then the TLS
     * handshake itself decides).
     *
     * @param body the ClientHello body, from {@code legacy_version} on (RFC 8446 section 4.1.2), as
     *     Netty's {@code SslClientHelloHandler} gives it; read without moving its indexes
     */
    static Optional<List<String>> offered(ByteBuf body) {
        int offset = body.readerIndex() + 2 + 32; // legacy_version, random
        int end = body.writerIndex();
        if (end - offset < 1) {
            return Optional.empty();
        }
        offset += 1 + body.getUnsignedByte(offset); // legacy_session_id
        if (end - offset < 2) {
            return Optional.empty();
        }
        offset += 2 + body.getUnsignedShort(offset); // cipher_suites
        if (end - offset < 1) {
            return Optional.empty();
        }
        offset += 1 + body.getUnsignedByte(offset); // legacy_compression_methods
        if (end - offset < 2) {
            return Optional.empty();
        }
        int extensionsEnd = offset + 2 + body.getUnsignedShort(offset);
        offset += 2;
        if (extensionsEnd > end) {
            return Optional.empty();
        }
        while (extensionsEnd - offset >= 4) {
            int type = body.getUnsignedShort(offset);
            int length = body.getUnsignedShort(offset + 2);
            offset += 4;
            if (extensionsEnd - offset < length) {
                return Optional.empty();
            }
            if (type == EXTENSION_TYPE) {
                return protocolNames(body, offset, offset + length);
            }
            offset += length;
        }
        return Optional.empty();
    }

    private static Optional<List<String>> protocolNames(ByteBuf body, int offset, int end) {
        if (end - offset < 2) {
            return Optional.empty();
        }
        int listEnd = offset + 2 + body.getUnsignedShort(offset);
        offset += 2;
        if (listEnd > end) {
            return Optional.empty();
        }
        List<String> names = new ArrayList<>();
        while (offset < listEnd) {
            int length = body.getUnsignedByte(offset);
            offset++;
            if (length == 0 || listEnd - offset < length) {
                return Optional.empty();
            }
            names.add(body.toString(offset, length, StandardCharsets.US_ASCII));
            offset += length;
        }
        return Optional.of(List.copyOf(names));
    }

    /**
     * Returns a fatal {@code no_application_protocol} alert record, in plaintext as every record
     * before the ServerHello is (RFC 8446 section 5.1; legacy_record_version 0x0303).
     */
    static ByteBuf alert(ByteBufAllocator alloc) {
        ByteBuf record = alloc.buffer(7);
        record.writeByte(CONTENT_TYPE_ALERT).writeShort(0x0303).writeShort(2)
                .writeByte(LEVEL_FATAL).writeByte(NO_APPLICATION_PROTOCOL);
        return record;
    }
}
