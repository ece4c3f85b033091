package dev.sluice.proxy.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.tls.ClientHelloParser;
import dev.sluice.proxy.tls.ClientHelloParser.Kind;
import dev.sluice.proxy.tls.ClientHelloParser.Result;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import org.junit.jupiter.api.Test;

/**
 * Findings of the proxy module's fuzz targets, each kept as a plain regression test (the input itself
 * also stays in the target's seed corpus, named {@code finding-*}).
 */
class FuzzFindingsTest {

    /**
     * ClientHelloParserFuzzTest: bytes that follow the ClientHello inside its own record counted against
     * {@code maxBytes}, so the same ClientHello was {@code TOO_LARGE} when they had arrived and complete
     * when they had not: the answer depended on how TCP cut the stream. Now only the ClientHello's bytes
     * count, and the parser waits for the ClientHello's end, not the record's.
     */
    @Test
    void bytesAfterTheClientHelloInItsRecordNeverMakeItTooLarge() throws Exception {
        byte[] hello = jdkClientHello("api.example.org");
        int helloLength = hello.length - 5;
        byte[] extra = new byte[2_000];
        byte[] record = new byte[hello.length + extra.length];
        System.arraycopy(hello, 0, record, 0, hello.length);
        int length = helloLength + extra.length;
        record[3] = (byte) (length >>> 8);
        record[4] = (byte) length;
        int max = hello.length + 100; // the ClientHello fits, its record does not

        assertThat(parse(record, record.length, max).kind()).isEqualTo(Kind.SNI);
        assertThat(parse(record, record.length, max).serverName()).isEqualTo("api.example.org");
        assertThat(parse(record, hello.length, max).kind()).isEqualTo(Kind.SNI);
        Result early = parse(record, hello.length - 1, max);
        assertThat(early.kind()).isEqualTo(Kind.NEED_MORE);
        assertThat(early.needBytes()).as("waits for the ClientHello's end").isEqualTo(hello.length);
    }

    private static Result parse(byte[] bytes, int length, int max) {
        ByteBuf buf = Unpooled.wrappedBuffer(Arrays.copyOf(bytes, length));
        try {
            return ClientHelloParser.parse(buf, max);
        } finally {
            buf.release();
        }
    }

    private static byte[] jdkClientHello(String sni) throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, null, null);
        SSLEngine engine = context.createSSLEngine(sni, 443);
        engine.setUseClientMode(true);
        SSLParameters params = engine.getSSLParameters();
        params.setServerNames(List.of(new SNIHostName(sni)));
        engine.setSSLParameters(params);
        ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), out);
        out.flip();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return bytes;
    }
}
