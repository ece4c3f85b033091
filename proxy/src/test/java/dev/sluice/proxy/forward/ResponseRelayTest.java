package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.testing.EmbeddedContext;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCounted;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ResponseRelay}'s own answers on {@link EmbeddedChannel}s, through the forwarder that owns it: the
 * forwarder adopts an upstream channel (as an intercepted tunnel's), the test writes the origin's bytes into
 * it and reads what reaches the client. A response is relayed with its framing for the client and one
 * record; a response the client did not ask for is dropped with its connection; an origin that closes
 * mid-body cuts the client's response and the record says so; a 101 nobody asked for is 502.
 */
class ResponseRelayTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    /** Every message the upstream codec decoded, seen before the relay took it. */
    private final List<Object> seen = new ArrayList<>();
    /** Those of {@link #seen} that hold a buffer. */
    private final List<ReferenceCounted> decoded = new ArrayList<>();
    private ProxyContext context;
    private Policy policy;

    @BeforeEach
    void setUp() {
        context = EmbeddedContext.create("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [8080]
                """);
        policy = context.policies().current();
    }

    /** A downstream channel whose forwarder adopted {@code upstream} for origin.test:8080. */
    private EmbeddedChannel downstream(EmbeddedChannel upstream) throws Exception {
        HttpForwarder forwarder = new HttpForwarder(context);
        EmbeddedChannel down = new EmbeddedChannel(forwarder);
        forwarder.adopt(upstream, new ByteCounter(),
                TargetParser.parseAbsoluteForm("http://origin.test:8080/").target(), policy);
        upstream.pipeline().addAfter("codec", "spy", new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                seen.add(msg);
                if (msg instanceof ReferenceCounted counted) {
                    decoded.add(counted);
                }
                ctx.fireChannelRead(msg);
            }
        });
        return down;
    }

    /** Sends a GET of {@code path} (no body) from the client and takes the request the origin got. */
    private void get(EmbeddedChannel down, EmbeddedChannel upstream, HttpVersion version, String path)
            throws Exception {
        HttpTarget target = TargetParser.parseAbsoluteForm("http://origin.test:8080" + path);
        HttpRequest request = new DefaultHttpRequest(version, HttpMethod.GET, path);
        request.headers().set("Host", "origin.test:8080");
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).listener(Listener.EXPLICIT).method("GET")
                .scheme("http").server("origin.test", 8080).urlPath(path);
        down.writeInbound(new ForwardRequest(request, target, Decision.allow("extensions.default.allow[0]"), policy,
                audit, true, null), LastHttpContent.EMPTY_LAST_CONTENT);
        ByteBuf sent = upstream.readOutbound();
        String line = sent.toString(StandardCharsets.ISO_8859_1);
        sent.release();
        assertThat(line).startsWith("GET " + path + " " + version + "\r\n");
        for (Object more = upstream.readOutbound(); more != null; more = upstream.readOutbound()) {
            ((ReferenceCounted) more).release(); // the empty last chunk's (empty) write
        }
    }

    private static ByteBuf ascii(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.ISO_8859_1);
    }

    private static String text(HttpContent content) {
        String s = content.content().toString(StandardCharsets.ISO_8859_1);
        content.release();
        return s;
    }

    @Test
    void aLengthFramedResponseIsRelayedAsItIsAndTheConnectionKept() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_1, "/a");

        upstream.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: keep-alive, X-Hop\r\n"
                + "X-Hop: 1\r\nX-Kept: 2\r\n\r\nhello"));

        HttpResponse head = down.readOutbound();
        assertThat(head.status().code()).isEqualTo(200);
        assertThat(head.protocolVersion()).isEqualTo(HttpVersion.HTTP_1_1);
        assertThat(head.headers().get("Content-Length")).isEqualTo("5");
        assertThat(head.headers().contains("Transfer-Encoding")).isFalse();
        assertThat(head.headers().contains("Connection")).as("hop-by-hop").isFalse();
        assertThat(head.headers().contains("X-Hop")).as("named by Connection").isFalse();
        assertThat(head.headers().get("X-Kept")).isEqualTo("2");
        HttpContent body = down.readOutbound();
        assertThat(body).isInstanceOf(LastHttpContent.class);
        assertThat(text(body)).isEqualTo("hello");
        assertThat((Object) down.readOutbound()).isNull();

        assertThat(down.isOpen()).isTrue();
        assertThat(upstream.isOpen()).as("kept for the next exchange").isTrue();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).statusCode()).isEqualTo(200);
        assertThat(records.get(0).error()).isNull();
        down.checkException();
        upstream.checkException();
        down.finishAndReleaseAll();
        upstream.finishAndReleaseAll();
    }

    @Test
    void aCloseDelimitedResponseIsRechunkedForAnHttp11ClientAndItsConnectionNotKept() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_1, "/close");

        upstream.writeInbound(ascii("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc"));
        HttpResponse head = down.readOutbound();
        assertThat(head.headers().get("Transfer-Encoding")).isEqualTo("chunked");
        assertThat(head.headers().contains("Connection")).isFalse();
        assertThat(text(down.readOutbound())).isEqualTo("abc");
        assertThat(records).as("the body ends with the origin's close").isEmpty();

        upstream.close();
        HttpContent end = down.readOutbound();
        assertThat(end).isInstanceOf(LastHttpContent.class);
        assertThat(text(end)).isEmpty();
        assertThat(down.isOpen()).as("the client keeps its connection").isTrue();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).statusCode()).isEqualTo(200);
        assertThat(records.get(0).error()).isNull();
        down.finishAndReleaseAll();
    }

    @Test
    void aResponseToAnHttp10ClientSaysKeepAlive() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_0, "/old");

        upstream.writeInbound(ascii("HTTP/1.1 204 No Content\r\n\r\n"));
        HttpResponse head = down.readOutbound();
        assertThat(head.status().code()).isEqualTo(204);
        assertThat(head.protocolVersion()).isEqualTo(HttpVersion.HTTP_1_1);
        assertThat(head.headers().get("Connection")).isEqualTo("keep-alive");
        assertThat(text(down.readOutbound())).isEmpty();
        assertThat(records).hasSize(1);
        down.finishAndReleaseAll();
        upstream.finishAndReleaseAll();
    }

    @Test
    void aSecondResponseInTheReadThatEndedTheFirstIsDroppedWithItsConnection() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_1, "/double");

        upstream.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                + "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Smuggled: 1\r\n\r\nsmuggled"));

        HttpResponse head = down.readOutbound();
        assertThat(head.headers().contains("X-Smuggled")).isFalse();
        assertThat(text(down.readOutbound())).isEqualTo("ok");
        assertThat((Object) down.readOutbound()).as("nothing of the second response").isNull();
        assertThat(upstream.isOpen()).as("never reused").isFalse();
        assertThat(down.isOpen()).isTrue();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).statusCode()).isEqualTo(200);
        // Both were decoded (two heads, two bodies); the relay released what it dropped (what it relayed
        // was released by the reads above).
        assertThat(seen).hasSize(4);
        assertThat(seen.get(2)).isInstanceOf(HttpResponse.class);
        assertThat(decoded).hasSize(2);
        assertThat(decoded).allSatisfy(ResponseRelayTest::assertReleased);
        down.checkException();
        down.finishAndReleaseAll();
    }

    @Test
    void anOriginClosingMidBodyCutsTheClientResponseAndTheRecordSaysSo() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_1, "/cut");

        upstream.writeInbound(ascii("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
        HttpResponse head = down.readOutbound();
        assertThat(head.headers().get("Content-Length")).isEqualTo("10");
        HttpContent part = down.readOutbound();
        assertThat(part).isNotInstanceOf(LastHttpContent.class);
        assertThat(text(part)).isEqualTo("abc");
        assertThat(down.isOpen()).isTrue();

        upstream.close();
        assertThat((Object) down.readOutbound()).as("no end of the body").isNull();
        assertThat(down.isOpen()).as("the client sees the cut as a close").isFalse();
        assertThat(records).hasSize(1);
        AuditRecord record = records.get(0);
        assertThat(record.statusCode()).isEqualTo(200);
        assertThat(record.error()).isEqualTo("upstream closed before the response ended");
        down.finishAndReleaseAll();
    }

    @Test
    void a101NobodyAskedForIsAnswered502AndReleased() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        get(down, upstream, HttpVersion.HTTP_1_1, "/switch");

        upstream.writeInbound(ascii("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\n\r\n"));
        FullHttpResponse answer = down.readOutbound();
        assertThat(answer.status().code()).isEqualTo(502);
        assertThat(answer.headers().get("X-Sluice-Reason")).isEqualTo("upstream_protocol_error");
        answer.release();
        assertThat((Object) down.readOutbound()).isNull();
        assertThat(upstream.isOpen()).isFalse();
        assertThat(down.isOpen()).isTrue();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).statusCode()).isEqualTo(502);
        assertThat(records.get(0).reason()).isEqualTo("upstream_protocol_error");
        assertThat(records.get(0).error())
                .isEqualTo("upstream switched protocols (101) though no upgrade was asked for");
        assertThat(decoded).allSatisfy(ResponseRelayTest::assertReleased);
        down.finishAndReleaseAll();
    }

    /** A decoded message was released (the shared empty buffer never is). */
    private static void assertReleased(ReferenceCounted message) {
        if (message instanceof io.netty.buffer.ByteBufHolder holder
                && holder.content() instanceof io.netty.buffer.EmptyByteBuf) {
            return;
        }
        assertThat(message.refCnt()).as("released: " + message).isZero();
    }
}
