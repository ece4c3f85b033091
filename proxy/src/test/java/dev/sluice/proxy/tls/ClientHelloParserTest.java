package dev.sluice.proxy.tls;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.tls.ClientHelloParser.Kind;
import dev.sluice.proxy.tls.ClientHelloParser.Result;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.Test;

/** ClientHellos from the JDK's own TLS client, re-cut and damaged in every way the parser must survive. */
public class ClientHelloParserTest {

    private static final int MAX = 32_768;

    /** Returns the first flight of a JDK TLS client: the records carrying its ClientHello. */
    public static byte[] clientHello(String sni) throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, null, null);
        SSLEngine engine = context.createSSLEngine(sni == null ? null : sni, 443);
        engine.setUseClientMode(true);
        SSLParameters params = engine.getSSLParameters();
        params.setServerNames(sni == null ? List.of() : List.of(new SNIHostName(sni)));
        engine.setSSLParameters(params);
        ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), out);
        out.flip();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return bytes;
    }

    private static Result parse(byte[] bytes) {
        return parse(bytes, MAX);
    }

    private static Result parse(byte[] bytes, int max) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes);
        try {
            Result r = ClientHelloParser.parse(buf, max);
            assertThat(buf.readerIndex()).as("reader index untouched").isZero();
            return r;
        } finally {
            buf.release();
        }
    }

    /** Re-cuts the handshake bytes of one-record {@code hello} into records of at most {@code size} bytes. */
    public static byte[] refragment(byte[] hello, int size) {
        byte[] handshake = Arrays.copyOfRange(hello, 5, hello.length);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < handshake.length; i += size) {
            int n = Math.min(size, handshake.length - i);
            out.write(22);
            out.write(3);
            out.write(1);
            out.write(n >> 8);
            out.write(n & 0xff);
            out.write(handshake, i, n);
        }
        return out.toByteArray();
    }

    @Test
    void sniFromARealClientHello() throws Exception {
        Result r = parse(clientHello("api.example.com"));
        assertThat(r.kind()).isEqualTo(Kind.SNI);
        assertThat(r.serverName()).isEqualTo("api.example.com");
    }

    @Test
    void noSni() throws Exception {
        assertThat(parse(clientHello(null)).kind()).isEqualTo(Kind.NO_SNI);
    }

    @Test
    void everyPrefixNeedsMore() throws Exception {
        byte[] hello = clientHello("prefix.example");
        for (int n = 1; n < hello.length; n++) {
            assertThat(parse(Arrays.copyOf(hello, n)).kind()).as("prefix of %d bytes", n).isEqualTo(Kind.NEED_MORE);
        }
        assertThat(parse(hello).serverName()).isEqualTo("prefix.example");
    }

    @Test
    void needBytesPointsAtTheNextBoundary() throws Exception {
        byte[] hello = clientHello("hint.example");
        assertThat(parse(Arrays.copyOf(hello, 3)).needBytes()).isEqualTo(5);
        assertThat(parse(Arrays.copyOf(hello, 10)).needBytes()).isEqualTo(hello.length);
        byte[] cut = refragment(hello, 100);
        assertThat(parse(Arrays.copyOf(cut, 105)).needBytes()).isEqualTo(110); // the next record's header
        assertThat(parse(Arrays.copyOf(cut, 107)).needBytes()).isEqualTo(110);
        assertThat(parse(Arrays.copyOf(cut, 111)).needBytes()).isEqualTo(110 + 100);
    }

    @Test
    void fragmentedAcrossRecords() throws Exception {
        byte[] hello = clientHello("fragments.example");
        for (int size : new int[] {1, 3, 7, 64, 200}) {
            byte[] cut = refragment(hello, size);
            Result r = parse(cut, 1 << 20);
            assertThat(r.kind()).as("records of %d bytes", size).isEqualTo(Kind.SNI);
            assertThat(r.serverName()).isEqualTo("fragments.example");
            // and across TCP reads as well: every prefix of the re-cut flight needs more
            for (int n = 1; n < cut.length; n += 17) {
                assertThat(parse(Arrays.copyOf(cut, n), 1 << 20).kind()).isEqualTo(Kind.NEED_MORE);
            }
        }
    }

    @Test
    void bytesAfterTheClientHelloAreIgnored() throws Exception {
        byte[] hello = clientHello("early.example");
        byte[] withMore = Arrays.copyOf(hello, hello.length + 10);
        withMore[hello.length] = 23; // application data would follow
        assertThat(parse(withMore).serverName()).isEqualTo("early.example");
    }

    @Test
    void oversized() throws Exception {
        byte[] hello = clientHello("big.example");
        assertThat(parse(hello, 100).kind()).isEqualTo(Kind.TOO_LARGE);
        // The handshake header alone announces too much: refused before the bytes arrive.
        assertThat(parse(Arrays.copyOf(hello, 9), 100).kind()).isEqualTo(Kind.TOO_LARGE);
        // Many tiny records: the record headers count too.
        assertThat(parse(refragment(hello, 1), hello.length + 20).kind()).isEqualTo(Kind.TOO_LARGE);
    }

    @Test
    void garbageAndOtherProtocols() {
        assertThat(parse("GET / HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII)).kind()).isEqualTo(Kind.NOT_TLS);
        assertThat(parse("SSH-2.0-OpenSSH_9.6\r\n".getBytes(StandardCharsets.US_ASCII)).kind()).isEqualTo(Kind.NOT_TLS);
        assertThat(parse(new byte[] {22, 9, 9}).kind()).isEqualTo(Kind.NOT_TLS);
        assertThat(parse(new byte[] {(byte) 0x80, 0x2e, 1}).kind()).isEqualTo(Kind.NOT_TLS); // SSLv2 hello
        assertThat(parse(new byte[0]).kind()).isEqualTo(Kind.NEED_MORE);
    }

    @Test
    void malformedStructures() throws Exception {
        byte[] hello = clientHello("bad.example");
        // not a ClientHello handshake message
        byte[] serverHello = hello.clone();
        serverHello[5] = 2;
        assertThat(parse(serverHello).kind()).isEqualTo(Kind.MALFORMED);
        // empty record
        assertThat(parse(new byte[] {22, 3, 1, 0, 0, 1}).kind()).isEqualTo(Kind.MALFORMED);
        // record longer than 2^14
        assertThat(parse(new byte[] {22, 3, 1, 0x40, 1, 1}).kind()).isEqualTo(Kind.MALFORMED);
        // an alert record in the middle of a fragmented ClientHello
        byte[] cut = refragment(hello, 50);
        cut[55] = 21;
        assertThat(parse(cut).kind()).isEqualTo(Kind.MALFORMED);
        // extensions length that does not match
        byte[] badExt = withBody(body(hello), body -> {
            int at = extensionsOffset(body);
            body[at + 1] ^= 0x01;
        });
        assertThat(parse(badExt).kind()).isEqualTo(Kind.MALFORMED);
        // a ClientHello body cut short (handshake length says so) is malformed
        byte[] shortBody = handshakeRecord(Arrays.copyOf(body(hello), 20));
        assertThat(parse(shortBody).kind()).isEqualTo(Kind.MALFORMED);
    }

    @Test
    void handcraftedServerNames() {
        assertThat(parse(handshakeRecord(helloBody(sniExtension(0, "a.example")))).serverName()).isEqualTo("a.example");
        // two server_name extensions
        byte[] twice = concat(sniExtension(0, "a.example"), sniExtension(0, "b.example"));
        assertThat(parse(handshakeRecord(helloBody(twice))).kind()).isEqualTo(Kind.MALFORMED);
        // a name with a space, a NUL, a non-ASCII byte
        for (String bad : new String[] {"a b", "a\u0000b", "caf\u00e9"}) {
            assertThat(parse(handshakeRecord(helloBody(sniExtension(0, bad)))).kind()).as(bad).isEqualTo(Kind.MALFORMED);
        }
        // an empty name
        assertThat(parse(handshakeRecord(helloBody(sniExtension(0, "")))).kind()).isEqualTo(Kind.MALFORMED);
        // an unknown name type only: no host_name
        assertThat(parse(handshakeRecord(helloBody(sniExtension(7, "x")))).kind()).isEqualTo(Kind.NO_SNI);
        // no extensions block at all
        assertThat(parse(handshakeRecord(helloBody(null))).kind()).isEqualTo(Kind.NO_SNI);
    }

    // ---- building blocks ------------------------------------------------------------------------

    private interface Edit {
        void apply(byte[] body);
    }

    private static byte[] body(byte[] oneRecordHello) {
        return Arrays.copyOfRange(oneRecordHello, 9, oneRecordHello.length);
    }

    private static byte[] withBody(byte[] body, Edit edit) {
        byte[] copy = body.clone();
        edit.apply(copy);
        return handshakeRecord(copy);
    }

    private static int extensionsOffset(byte[] body) {
        int at = 2 + 32;
        at += 1 + (body[at] & 0xff);
        at += 2 + (((body[at] & 0xff) << 8) | (body[at + 1] & 0xff));
        at += 1 + (body[at] & 0xff);
        return at;
    }

    /** A ClientHello body: version, random, empty session id, one suite, null compression, extensions. */
    private static byte[] helloBody(byte[] extensions) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(3);
        out.write(3);
        out.writeBytes(new byte[32]);
        out.write(0);
        out.writeBytes(new byte[] {0, 2, 0x13, 0x01});
        out.writeBytes(new byte[] {1, 0});
        if (extensions != null) {
            out.write(extensions.length >> 8);
            out.write(extensions.length & 0xff);
            out.writeBytes(extensions);
        }
        return out.toByteArray();
    }

    private static byte[] sniExtension(int nameType, String name) {
        byte[] n = name.getBytes(StandardCharsets.ISO_8859_1);
        int listLength = 3 + n.length;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(new byte[] {0, 0, (byte) ((listLength + 2) >> 8), (byte) (listLength + 2)});
        out.writeBytes(new byte[] {(byte) (listLength >> 8), (byte) listLength, (byte) nameType,
            (byte) (n.length >> 8), (byte) n.length});
        out.writeBytes(n);
        return out.toByteArray();
    }

    private static byte[] handshakeRecord(byte[] body) {
        int hs = body.length + 4;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(new byte[] {22, 3, 1, (byte) (hs >> 8), (byte) hs, 1, 0, (byte) (body.length >> 8),
            (byte) body.length});
        out.writeBytes(body);
        return out.toByteArray();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }
}
