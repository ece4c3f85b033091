package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.certs.PinResult;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.DefaultHttp2GoAwayFrame;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link H2Upstream} on an {@link EmbeddedChannel} (the upstream connection, a stand-in for its TLS
 * handler in front), answered by Netty's HTTP/2 server codec on another EmbeddedChannel (the origin),
 * the bytes carried between them: a stream's pipeline, a whole response split into head and last
 * content for the forwarder, and {@link H2Upstream#usable} under the origin's stream limit and GOAWAY.
 */
class H2UpstreamAnswersTest {

    private final Policy policy = parse();
    private EmbeddedChannel connection;
    private EmbeddedChannel origin;
    private H2Upstream h2;
    /** The requests the origin received. */
    private final List<HttpRequest> seen = new ArrayList<>();
    /** What the origin answers next: its status. */
    private HttpResponseStatus answer = HttpResponseStatus.OK;

    private static Policy parse() {
        try {
            return PolicyLoader.parse("version: 1\n", "h2.yaml");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void start(Http2Settings originSettings, boolean answers) {
        connection = new EmbeddedChannel();
        connection.pipeline().addLast("tls", new ChannelInboundHandlerAdapter());
        h2 = H2Upstream.install(connection, "tls", "api.llm.test:443", policy, PinResult.NONE);
        origin = new EmbeddedChannel(Http2FrameCodecBuilder.forServer().initialSettings(originSettings).build(),
                new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
                    @Override
                    protected void initChannel(Http2StreamChannel ch) {
                        ch.pipeline().addLast(new Http2StreamFrameToHttpObjectCodec(true));
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                if (msg instanceof HttpRequest r) {
                                    seen.add(r);
                                }
                                if (msg instanceof LastHttpContent && answers) {
                                    ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, answer));
                                }
                                ReferenceCountUtil.release(msg);
                            }
                        });
                    }
                }));
        shuttle();
    }

    @AfterEach
    void tearDown() {
        connection.finishAndReleaseAll();
        origin.finishAndReleaseAll();
    }

    private void shuttle() {
        boolean moved;
        do {
            moved = false;
            for (Object m; (m = connection.readOutbound()) != null; moved = true) {
                origin.writeInbound(m);
            }
            for (Object m; (m = origin.readOutbound()) != null; moved = true) {
                connection.writeInbound(m);
            }
            connection.runPendingTasks();
            origin.runPendingTasks();
        } while (moved);
    }

    private Http2StreamChannel open(List<HttpObject> responses) {
        ChannelDuplexHandler counter = new ChannelDuplexHandler();
        ChannelInboundHandlerAdapter response = new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                responses.add((HttpObject) msg);
            }
        };
        Http2StreamChannel stream = h2.openStream(counter, response).syncUninterruptibly().getNow();
        assertThat(stream.pipeline().names()).startsWith("bytes", "codec", "h2-head", "response");
        assertThat(stream.pipeline().get("bytes")).isSameAs(counter);
        return stream;
    }

    private static DefaultFullHttpRequest get(String path) {
        DefaultFullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
        r.headers().set("host", "api.llm.test");
        return r;
    }

    @Test
    void aStreamCarriesTheRequestAndAWholeResponseReachesTheForwarderAsHeadThenLastContent() {
        start(Http2Settings.defaultSettings(), true);
        assertThat(h2.serves("api.llm.test:443", policy)).isTrue();
        assertThat(h2.serves("api.llm.test:443", parse())).as("another snapshot dials its own").isFalse();
        assertThat(h2.serves("other.llm.test:443", policy)).isFalse();
        assertThat(h2.usable()).isTrue();
        List<HttpObject> responses = new ArrayList<>();
        Http2StreamChannel stream = open(responses);
        stream.writeAndFlush(get("/v1/models?limit=1"));
        shuttle();
        assertThat(seen).singleElement().satisfies(r -> {
            assertThat(r.method()).isEqualTo(HttpMethod.GET);
            assertThat(r.uri()).isEqualTo("/v1/models?limit=1");
        });
        assertThat(responses).hasSize(2);
        assertThat(responses.get(0)).isInstanceOf(HttpResponse.class).isNotInstanceOf(FullHttpResponse.class);
        HttpResponse head = (HttpResponse) responses.get(0);
        assertThat(head.status().code()).isEqualTo(200);
        assertThat(head.headers().contains("content-length")).as("an empty body may answer a HEAD: no length")
                .isFalse();
        assertThat(responses.get(1)).isInstanceOf(LastHttpContent.class);
        assertThat(((LastHttpContent) responses.get(1)).content().readableBytes()).isZero();
        responses.forEach(ReferenceCountUtil::release);
    }

    @Test
    void noStreamIsOpenedBeyondTheOriginsLimitNorAfterItsGoaway() {
        start(Http2Settings.defaultSettings().maxConcurrentStreams(1), false);
        assertThat(h2.usable()).isTrue();
        List<HttpObject> responses = new ArrayList<>();
        Http2StreamChannel stream = open(responses);
        stream.writeAndFlush(get("/v1/slow"));
        shuttle();
        assertThat(seen).hasSize(1);
        assertThat(h2.usable()).as("one stream of one allowed is open").isFalse();
        stream.close();
        shuttle();
        assertThat(h2.usable()).as("the stream ended").isTrue();
        origin.writeAndFlush(new DefaultHttp2GoAwayFrame(Http2Error.NO_ERROR, Unpooled.copiedBuffer("bye",
                StandardCharsets.US_ASCII)));
        shuttle();
        assertThat(h2.usable()).as("GOAWAY received").isFalse();
        assertThat(responses).isEmpty();
    }

    @Test
    void aConnectionErrorClosesTheConnection() {
        start(Http2Settings.defaultSettings(), true);
        connection.pipeline().fireExceptionCaught(new java.io.IOException("Connection reset by peer"));
        assertThat(connection.isOpen()).isFalse();
        assertThat(h2.usable()).isFalse();
    }
}
