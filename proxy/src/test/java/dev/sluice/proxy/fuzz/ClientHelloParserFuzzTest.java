package dev.sluice.proxy.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.proxy.tls.ClientHelloParser;
import dev.sluice.proxy.tls.ClientHelloParser.Kind;
import dev.sluice.proxy.tls.ClientHelloParser.Result;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Fuzzes the ClientHello parser (RFC 8446 section 4.1.2, RFC 6066 section 3): any bytes give a result,
 * never an exception; the reader index is untouched; an SNI is 1..255 printable ASCII characters; and
 * the parser is consistent with itself as bytes arrive: a prefix of the input never yields a different
 * complete answer than the whole (it is {@code NEED_MORE} or the same kind and name, or a refusal that
 * the whole also gives). Seeds: {@code ClientHelloParserFuzzTestInputs/} (JDK ClientHellos, cut and
 * damaged).
 */
class ClientHelloParserFuzzTest {

    @FuzzTest(maxDuration = "30s")
    void parse(FuzzedDataProvider data) {
        int max = data.consumeInt(1, 40_000);
        int prefix = data.consumeInt(0, Integer.MAX_VALUE);
        byte[] bytes = data.consumeRemainingAsBytes();
        Result whole = parse(bytes, bytes.length, max);
        if (whole.kind() == Kind.SNI) {
            assertThat(whole.serverName()).hasSizeBetween(1, 255);
            assertThat(whole.serverName().chars()).allMatch(c -> c > 0x20 && c < 0x7f);
        }
        if (whole.kind() == Kind.NEED_MORE) {
            assertThat(whole.needBytes()).isGreaterThan(bytes.length);
        }
        int cut = bytes.length == 0 ? 0 : prefix % (bytes.length + 1);
        Result part = parse(bytes, cut, max);
        if (part.kind() == Kind.SNI || part.kind() == Kind.NO_SNI) {
            assertThat(whole.kind()).as("a complete ClientHello in a prefix stays one").isEqualTo(part.kind());
            assertThat(whole.serverName()).isEqualTo(part.serverName());
        }
    }

    private static Result parse(byte[] bytes, int length, int max) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes, 0, length);
        try {
            Result r = ClientHelloParser.parse(buf, max);
            assertThat(buf.readerIndex()).isZero();
            return r;
        } finally {
            buf.release();
        }
    }
}
