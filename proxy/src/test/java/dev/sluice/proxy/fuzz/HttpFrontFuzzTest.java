package dev.sluice.proxy.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.request.ExplicitRequestHandler;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.StrictRequestDecoder;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.testing.EmbeddedContext;
import dev.sluice.proxy.testing.InetEmbeddedChannel;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * Fuzzes the explicit listener's HTTP front (the strict decoder and the request phase, the
 * pipeline {@link HttpPipeline} builds, up to the forwarder) through an EmbeddedChannel,
 * with the bytes cut into up to four reads. A recording stand-in for the forwarder answers each
 * exchange 200. Properties: no exception leaves the pipeline; every answer is an HTTP/1.1 status line
 * of the documented set; what the front hands on as a request has exactly one Host, no
 * Proxy-Authorization, not both Content-Length and Transfer-Encoding, an origin-form target and a
 * method other than CONNECT; and no failed body content ever reaches the forwarder (a broken chunked
 * body becomes an {@link ExchangeControl.Abort}). Seeds: {@code HttpFrontFuzzTestInputs/}.
 */
class HttpFrontFuzzTest {

    private static final Set<Integer> STATUSES = Set.of(200, 400, 403, 407, 413, 415, 421, 431, 429, 503);
    private static final ProxyContext CONTEXT = EmbeddedContext.create("""
            version: 1
            extensions:
              tok:
                auth: { token_sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }
                allow:
                  - host: tok.test
              default:
                allow:
                  - host: allowed.test
                    ports: [80, 8080, 443]
                  - host: get-only.test
                    methods: [GET]
            """);

    @FuzzTest(maxDuration = "30s")
    void front(FuzzedDataProvider data) {
        int cut1 = data.consumeInt(0, 1 << 16);
        int cut2 = data.consumeInt(0, 1 << 16);
        byte[] bytes = data.consumeRemainingAsBytes();
        EmbeddedChannel ch = new InetEmbeddedChannel(new InetSocketAddress("127.0.0.1", 3128),
                new InetSocketAddress("127.0.0.1", 40000));
        ch.pipeline()
                .addLast(HttpPipeline.DECODER, new StrictRequestDecoder(
                        HttpPipeline.decoderConfig(CONTEXT.policies().current().limits())))
                .addLast(HttpPipeline.ENCODER, new HttpResponseEncoder())
                .addLast(HttpPipeline.REQUEST, new ExplicitRequestHandler(CONTEXT))
                .addLast(HttpPipeline.FORWARD, new RecordingForwarder());
        try {
            int a = Math.min(cut1, bytes.length);
            int b = Math.min(Math.max(a, cut2), bytes.length);
            for (int[] part : new int[][] {{0, a}, {a, b}, {b, bytes.length}}) {
                if (part[1] > part[0] && ch.isOpen()) {
                    ch.writeInbound(Unpooled.copiedBuffer(bytes, part[0], part[1] - part[0]));
                    ch.checkException();
                }
            }
            ch.runPendingTasks();
            ch.checkException();
            StringBuilder out = new StringBuilder();
            for (Object o; (o = ch.readOutbound()) != null; ) {
                ByteBuf buf = (ByteBuf) o;
                out.append(buf.toString(StandardCharsets.ISO_8859_1));
                buf.release();
            }
            String answers = out.toString();
            int at = 0;
            while (at < answers.length()) {
                assertThat(answers.startsWith("HTTP/1.1 ", at)).as("an HTTP/1.1 status line at %d: %s", at, answers)
                        .isTrue();
                int status = Integer.parseInt(answers.substring(at + 9, at + 12));
                assertThat(STATUSES).as("status").contains(status);
                int headEnd = answers.indexOf("\r\n\r\n", at);
                assertThat(headEnd).isPositive();
                int length = contentLength(answers.substring(at, headEnd));
                at = headEnd + 4 + length;
            }
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    private static int contentLength(String head) {
        for (String line : head.split("\r\n")) {
            if (line.regionMatches(true, 0, "content-length:", 0, 15)) {
                return Integer.parseInt(line.substring(15).trim());
            }
        }
        return 0;
    }

    /** Stands in for the forwarder: checks what the front hands on, answers 200 at each request's end. */
    private static final class RecordingForwarder extends ChannelInboundHandlerAdapter {
        private ForwardRequest current;
        /** After a CONNECT, what follows belongs to the tunnel phase (the real ConnectHandler). */
        private boolean tunnel;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (tunnel) {
                    return;
                }
                if (msg instanceof ForwardRequest request) {
                    assertThat(current).as("one exchange at a time").isNull();
                    check(request);
                    current = request;
                } else if (msg instanceof HttpContent content) {
                    assertThat(content.decoderResult().isSuccess()).as("a failed body content reached the forwarder")
                            .isTrue();
                    assertThat(current).as("body content without an exchange").isNotNull();
                    if (msg instanceof LastHttpContent) {
                        current.audit().statusCode(200).emit();
                        current = null;
                        DefaultFullHttpResponse ok = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                HttpResponseStatus.OK);
                        ok.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                        ctx.writeAndFlush(ok);
                        ChannelHandlerContext phase = ctx.pipeline().context(ExplicitRequestHandler.class);
                        ((ExplicitRequestHandler) phase.handler()).exchangeComplete(phase);
                    }
                } else if (msg instanceof ExchangeControl.ClientClosedMidBody) {
                    if (current != null) {
                        current.audit().error(ExchangeControl.ClientClosedMidBody.ERROR).emit();
                        current = null;
                    }
                    ctx.close();
                } else if (msg instanceof ExchangeControl.Abort broken) {
                    if (current != null) {
                        current.audit().decision(broken.decision()).emit();
                        current = null;
                    }
                    DefaultFullHttpResponse refused = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                            HttpResponseStatus.BAD_REQUEST);
                    refused.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
                    ctx.writeAndFlush(refused).addListener(ChannelFutureListener.CLOSE);
                } else if (msg instanceof ConnectRequest connect) {
                    assertThat(current).isNull();
                    tunnel = true;
                    connect.audit().emit();
                    ctx.close();
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private static void check(ForwardRequest forward) {
            HttpHeaders headers = forward.request().headers();
            assertThat(headers.getAll(HttpHeaderNames.HOST)).hasSize(1);
            assertThat(headers.contains(HttpHeaderNames.PROXY_AUTHORIZATION)).isFalse();
            assertThat(headers.contains(HttpHeaderNames.CONTENT_LENGTH)
                    && headers.contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
            assertThat(headers.getAll(HttpHeaderNames.CONTENT_LENGTH)).hasSizeLessThanOrEqualTo(1);
            assertThat(headers.getAll(HttpHeaderNames.TRANSFER_ENCODING)).hasSizeLessThanOrEqualTo(1);
            assertThat(forward.request().uri()).startsWith("/");
            assertThat(forward.request().method()).isNotEqualTo(HttpMethod.CONNECT);
            assertThat(forward.decision().permits()).isTrue();
        }
    }
}
