package dev.sluice.proxy.explicit;

import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.http.StrictRequestDecoder;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Limits;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The strict request decoder's own answers, through an EmbeddedChannel: every malformed chunked body
 * (RFC 9112 section 7.1) ends in a failed last content, nothing after it is decoded, and valid
 * chunked bodies (extensions, BWS before ';', upper-case hex, ordinary trailers) pass whole.
 */
class StrictRequestDecoderTest {

    static final String HEAD = "POST http://origin.test/up HTTP/1.1\r\nHost: origin.test\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n";
    /** A request pipelined behind the body: it must never be decoded once the body failed. */
    static final String NEXT = "GET http://origin.test/next HTTP/1.1\r\nHost: origin.test\r\n\r\n";

    /** Malformed chunked bodies, byte by byte (the name says what is wrong). */
    static Stream<Arguments> malformedBodies() {
        return Stream.of(
                Arguments.of("second number", "5 6\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("hex prefix", "0x5\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("plus sign", "+5\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("minus sign", "-5\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("empty size", "\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("leading space", " 5\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("trailing space without extension", "5 \r\nhello\r\n0\r\n\r\n"),
                Arguments.of("bare LF after size", "5\nhello\r\n0\r\n\r\n"),
                Arguments.of("bare CR after size", "5\rhello\r\n0\r\n\r\n"),
                Arguments.of("NUL after size", "5\u0000\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("over-long size (leading zeros)", "000000005\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("size overflow", "100000000\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("huge size", "ffffffffffffffff5\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("empty extension", "5;\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("control character in extension", "5;a\u0001b\r\nhello\r\n0\r\n\r\n"),
                Arguments.of("bare LF in extension", "5;a=b\nhello\r\n0\r\n\r\n"),
                Arguments.of("data longer than its size", "5\r\nhelloX\r\n0\r\n\r\n"),
                Arguments.of("bare LF after data", "5\r\nhello\n0\r\n\r\n"),
                Arguments.of("no CRLF after data", "5\r\nhello0\r\n\r\n"),
                Arguments.of("bare LF after last chunk", "5\r\nhello\r\n0\n\r\n"),
                Arguments.of("bare LF ending the body", "5\r\nhello\r\n0\r\n\n"),
                Arguments.of("trailer obs-fold", "5\r\nhello\r\n0\r\nX-Sum: a\r\n b\r\n\r\n"),
                Arguments.of("trailer without colon", "5\r\nhello\r\n0\r\njunk\r\n\r\n"),
                Arguments.of("trailer space before colon", "5\r\nhello\r\n0\r\nX-Sum : a\r\n\r\n"),
                Arguments.of("trailer bare LF", "5\r\nhello\r\n0\r\nX-Sum: a\n\r\n"),
                Arguments.of("trailer control character", "5\r\nhello\r\n0\r\nX-Sum: a\u0001\r\n\r\n"),
                Arguments.of("trailer Content-Length", "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n"),
                Arguments.of("trailer Transfer-Encoding", "5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n"),
                Arguments.of("trailer Host", "5\r\nhello\r\n0\r\nHost: other.test\r\n\r\n"),
                Arguments.of("trailer Proxy-Authorization",
                        "5\r\nhello\r\n0\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n\r\n"));
    }

    /** Heads whose framing fields are repeated or contradict each other. */
    static Stream<Arguments> ambiguousHeads() {
        return Stream.of(
                Arguments.of("Content-Length with Transfer-Encoding",
                        "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                Arguments.of("Content-Length twice, different",
                        "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
                Arguments.of("Content-Length twice, equal", "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello"),
                Arguments.of("Content-Length list", "Content-Length: 5, 5\r\n\r\nhello"),
                Arguments.of("Transfer-Encoding twice",
                        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedBodies")
    void malformedChunkedBodyEndsInAFailureAndNothingAfterIsDecoded(String name, String body) {
        List<Object> out = decode(HEAD + body + NEXT);
        try {
            assertThat(out.get(0)).isInstanceOf(HttpRequest.class);
            assertThat(((HttpRequest) out.get(0)).decoderResult().isSuccess()).isTrue();
            Object last = out.get(out.size() - 1);
            assertThat(last).isInstanceOf(LastHttpContent.class);
            assertThat(((LastHttpContent) last).decoderResult().isFailure()).as(name).isTrue();
            // Exactly one request and one end (the failed one): the pipelined GET was never decoded.
            assertThat(out.stream().filter(o -> o instanceof HttpRequest)).hasSize(1);
            assertThat(out.stream().filter(o -> o instanceof LastHttpContent)).hasSize(1);
        } finally {
            out.forEach(ReferenceCountUtil::release);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedBodies")
    void malformedChunkedBodyFailsAlsoWhenItArrivesOneByteAtATime(String name, String body) {
        List<Object> out = decodeByteByByte(HEAD + body + NEXT);
        try {
            Object last = out.get(out.size() - 1);
            assertThat(last).isInstanceOf(LastHttpContent.class);
            assertThat(((LastHttpContent) last).decoderResult().isFailure()).as(name).isTrue();
            assertThat(out.stream().filter(o -> o instanceof HttpRequest)).hasSize(1);
        } finally {
            out.forEach(ReferenceCountUtil::release);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("ambiguousHeads")
    void ambiguousHeadIsAFailedRequestWithAmbiguousFraming(String name, String rest) {
        List<Object> out = decode("POST http://origin.test/up HTTP/1.1\r\nHost: origin.test\r\n" + rest + NEXT);
        try {
            HttpRequest request = (HttpRequest) out.get(0);
            assertThat(request.decoderResult().isFailure()).isTrue();
            assertThat(request.decoderResult().cause()).isInstanceOf(StrictRequestDecoder.AmbiguousFramingException.class);
            assertThat(out.stream().filter(o -> o instanceof HttpRequest)).hasSize(1);
        } finally {
            out.forEach(ReferenceCountUtil::release);
        }
    }

    @Test
    void validChunkedBodiesPassWholeWithTheirTrailers() {
        String body = "5;name=value\r\nhello\r\n6 ;quoted=\"a b\"\r\n world\r\nA\r\n0123456789\r\n"
                + "0\r\nX-Checksum: abc\r\n\r\n";
        for (List<Object> out : List.of(decode(HEAD + body + NEXT), decodeByteByByte(HEAD + body + NEXT))) {
            try {
                StringBuilder content = new StringBuilder();
                LastHttpContent end = null;
                int requests = 0;
                for (Object o : out) {
                    if (o instanceof HttpRequest r) {
                        assertThat(r.decoderResult().isSuccess()).isTrue();
                        requests++;
                    }
                    if (o instanceof HttpContent c) {
                        assertThat(c.decoderResult().isSuccess()).isTrue();
                        if (requests == 1) {
                            content.append(c.content().toString(StandardCharsets.ISO_8859_1));
                        }
                        if (o instanceof LastHttpContent l && end == null) {
                            end = l;
                        }
                    }
                }
                assertThat(content.toString()).isEqualTo("hello world0123456789");
                assertThat(end.trailingHeaders().get("X-Checksum")).isEqualTo("abc");
                assertThat(requests).isEqualTo(2);
            } finally {
                out.forEach(ReferenceCountUtil::release);
            }
        }
    }

    private static EmbeddedChannel channel() {
        return new EmbeddedChannel(new StrictRequestDecoder(HttpPipeline.decoderConfig(
                new Limits(Duration.ofSeconds(15), Duration.ofSeconds(120), 32768, 32L << 20, 512))));
    }

    private static List<Object> decode(String input) {
        EmbeddedChannel ch = channel();
        ch.writeInbound(Unpooled.copiedBuffer(input, StandardCharsets.ISO_8859_1));
        return drain(ch);
    }

    private static List<Object> decodeByteByByte(String input) {
        EmbeddedChannel ch = channel();
        byte[] bytes = input.getBytes(StandardCharsets.ISO_8859_1);
        for (byte b : bytes) {
            ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {b}));
        }
        return drain(ch);
    }

    private static List<Object> drain(EmbeddedChannel ch) {
        List<Object> out = new ArrayList<>();
        for (Object o; (o = ch.readInbound()) != null; ) {
            out.add(o);
        }
        ch.finishAndReleaseAll();
        return out;
    }
}
