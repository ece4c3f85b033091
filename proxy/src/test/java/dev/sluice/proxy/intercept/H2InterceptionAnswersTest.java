package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.forward.H2Upstreams;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link H2Interception}'s handlers on an {@link EmbeddedChannel} (the downstream connection, with a
 * stand-in for its TLS handler), spoken to by Netty's HTTP/2 client codec on another EmbeddedChannel,
 * the bytes carried between them: what a stream's request phases receive (the head made ready by
 * {@code StreamRequestHead}), the 431 {@code header_too_large} answer and record of a header list over
 * the limit, and the tunnel record's error line on a connection error, an idle timeout and a FIN.
 */
class H2InterceptionAnswersTest {

    private static final int MAX_HEADER_BYTES = 4096;

    private final List<AuditRecord> streamRecords = new ArrayList<>();
    private final List<AuditRecord> tunnelRecords = new ArrayList<>();
    private final AuditEvent tunnelAudit = new AuditEvent(tunnelRecords::add, Clock.systemUTC());
    /** What the request phases of each stream received (released). */
    private final List<Object> received = new ArrayList<>();
    private EmbeddedChannel server;
    private EmbeddedChannel client;

    @BeforeEach
    void setUp() {
        server = new EmbeddedChannel();
        server.pipeline().addLast("tls", new ChannelInboundHandlerAdapter());
        H2Interception.install(server.pipeline(), "tls", MAX_HEADER_BYTES, (pipeline, after) ->
                pipeline.addAfter(after, "phases", new Phases()),
                () -> new AuditEvent(streamRecords::add, Clock.systemUTC()), tunnelAudit);
        client = new EmbeddedChannel(Http2FrameCodecBuilder.forClient().build(),
                new Http2MultiplexHandler(new ChannelInboundHandlerAdapter()));
        // not carried yet: a test may write before the server's SETTINGS reach the client
    }

    @AfterEach
    void tearDown() {
        client.finishAndReleaseAll();
        server.finishAndReleaseAll();
    }

    /** Stands in for the request phases: keeps a description of what reached it, answers 204 at the end. */
    private final class Phases extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest r) {
                received.add(r);
                received.add(ctx.channel().attr(H2Upstreams.TE_TRAILERS).get());
            }
            if (msg instanceof HttpContent c) {
                received.add((c instanceof LastHttpContent ? "last:" : "content:")
                        + c.content().toString(StandardCharsets.UTF_8));
            }
            if (msg instanceof LastHttpContent) {
                ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                        io.netty.handler.codec.http.HttpResponseStatus.NO_CONTENT));
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /** Carries bytes both ways until neither side has more to say. */
    private void shuttle() {
        boolean moved;
        do {
            moved = false;
            for (Object m; (m = client.readOutbound()) != null; moved = true) {
                if (server.isOpen()) {
                    server.writeInbound(m);
                } else {
                    ReferenceCountUtil.release(m);
                }
            }
            for (Object m; (m = server.readOutbound()) != null; moved = true) {
                if (client.isOpen()) {
                    client.writeInbound(m);
                } else {
                    ReferenceCountUtil.release(m);
                }
            }
            client.runPendingTasks();
            server.runPendingTasks();
        } while (moved);
    }

    /** Opens a client stream whose answers go to {@code answers}. */
    private Http2StreamChannel stream(List<HttpObject> answers) {
        Http2StreamChannel ch = new Http2StreamChannelBootstrap(client).handler(
                new io.netty.channel.ChannelInitializer<Http2StreamChannel>() {
                    @Override
                    protected void initChannel(Http2StreamChannel c) {
                        c.pipeline().addLast(new Http2StreamFrameToHttpObjectCodec(false));
                        c.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                answers.add((HttpObject) msg);
                            }
                        });
                    }
                }).open().syncUninterruptibly().getNow();
        return ch;
    }

    private static HttpRequest head(String path) {
        HttpRequest r = new io.netty.handler.codec.http.DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, path);
        r.headers().set("host", "api.llm.test").set("x-http2-scheme", "https").set("te", "trailers");
        return r;
    }

    @Test
    void aStreamWithoutALengthReachesThePhasesChunkedWithoutTheCodecsFields() {
        List<HttpObject> answers = new ArrayList<>();
        Http2StreamChannel s = stream(answers);
        s.write(head("/v1/stream"));
        // flushed apart: the client's flow controller merges DATA frames queued together
        s.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer("abc", StandardCharsets.UTF_8)));
        shuttle();
        s.writeAndFlush(new DefaultLastHttpContent(Unpooled.copiedBuffer("def", StandardCharsets.UTF_8)));
        shuttle();
        assertThat(received).hasSize(4);
        HttpRequest request = (HttpRequest) received.get(0);
        assertThat(request.method()).isEqualTo(HttpMethod.POST);
        assertThat(request.uri()).isEqualTo("/v1/stream");
        assertThat(request.headers().names()).noneMatch(n -> n.toLowerCase().startsWith("x-http2-"));
        assertThat(request.headers().get("transfer-encoding")).as("framed by END_STREAM on h2").isEqualTo("chunked");
        assertThat(received.get(1)).as("TE: trailers noted for an h2 upstream leg").isEqualTo(Boolean.TRUE);
        assertThat(received.subList(2, 4)).containsExactly("content:abc", "last:def");
        assertThat(answers).hasSize(1);
        assertThat(((HttpResponse) answers.get(0)).status().code()).isEqualTo(204);
        answers.forEach(ReferenceCountUtil::release);
    }

    @Test
    void aWholeRequestIsHandedOnAsItsHeadThenItsLastContent() {
        List<HttpObject> answers = new ArrayList<>();
        Http2StreamChannel s = stream(answers);
        FullHttpRequest full = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1/models");
        full.headers().set("host", "api.llm.test");
        s.writeAndFlush(full);
        shuttle();
        assertThat(received).hasSize(3);
        assertThat(received.get(0)).isInstanceOf(HttpRequest.class).isNotInstanceOf(FullHttpRequest.class);
        assertThat(((HttpRequest) received.get(0)).uri()).isEqualTo("/v1/models");
        assertThat(received.get(1)).isEqualTo(Boolean.FALSE);
        assertThat(received.get(2)).isEqualTo("last:");
        answers.forEach(ReferenceCountUtil::release);
    }

    @Test
    void aHeaderListOverTheLimitIsAnswered431WithItsOwnRecord() {
        List<HttpObject> answers = new ArrayList<>();
        Http2StreamChannel s = stream(answers);
        HttpRequest big = head("/v1/big");
        big.headers().set("x-big", "b".repeat(MAX_HEADER_BYTES + 100));
        s.writeAndFlush(big);
        shuttle();
        assertThat(received).as("the phases never see it").isEmpty();
        assertThat(answers).isNotEmpty();
        HttpResponse answer = (HttpResponse) answers.get(0);
        assertThat(answer.status().code()).isEqualTo(431);
        assertThat(answer.headers().get("x-sluice-reason")).isEqualTo("header_too_large");
        assertThat(answer.headers().get("proxy-status")).contains("header_too_large");
        answers.forEach(ReferenceCountUtil::release);
        assertThat(streamRecords).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("header_too_large");
            assertThat(r.statusCode()).isEqualTo(431);
            assertThat(r.error()).matches("h2 header list over 4096 bytes \\(stream \\d+\\)");
        });
        assertThat(server.isOpen()).as("the connection stays").isTrue();
    }

    @Test
    void aConnectionErrorPutsOneLineInTheTunnelRecordAndEndsTheConnection() {
        shuttle();
        ByteBuf garbage = Unpooled.buffer().writeBytes(new byte[] {0, 0, 4, 8, 0, 0, 0, 0, 0}); // WINDOW_UPDATE, 4 bytes
        garbage.writeInt(0); // increment 0 on the connection: PROTOCOL_ERROR (RFC 9113 section 6.9)
        server.writeInbound(garbage);
        server.runPendingTasks();
        assertThat(tunnelAudit.errorOrNull()).startsWith("h2 connection error PROTOCOL_ERROR (GOAWAY): ");
        assertThat(server.isOpen()).isFalse();
    }

    @Test
    void anIdleTimeoutAndAFinCloseTheConnection() {
        server.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        assertThat(server.isOpen()).isFalse();
        assertThat(tunnelAudit.errorOrNull()).isEqualTo("idle_timeout: no byte either way on the h2 connection");
        assertThat(tunnelRecords).as("the tunnel's owner writes its record").isEmpty();

        EmbeddedChannel other = new EmbeddedChannel();
        other.pipeline().addLast("tls", new ChannelInboundHandlerAdapter());
        AuditEvent otherAudit = new AuditEvent(tunnelRecords::add, Clock.systemUTC());
        H2Interception.install(other.pipeline(), "tls", MAX_HEADER_BYTES, (pipeline, after) -> { },
                () -> new AuditEvent(streamRecords::add, Clock.systemUTC()), otherAudit);
        other.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertThat(other.isOpen()).as("an h2 client sends nothing after its FIN").isFalse();
        assertThat(otherAudit.errorOrNull()).isNull();
        other.finishAndReleaseAll();
    }

    @Test
    void theClientIsToldTheConcurrentStreamLimit() {
        shuttle();
        // the client's codec applied the server's SETTINGS: streams beyond the limit cannot be opened
        io.netty.handler.codec.http2.Http2FrameCodec codec = client.pipeline()
                .get(io.netty.handler.codec.http2.Http2FrameCodec.class);
        assertThat(codec.connection().local().maxActiveStreams()).isEqualTo(H2Interception.MAX_CONCURRENT_STREAMS);
    }
}
