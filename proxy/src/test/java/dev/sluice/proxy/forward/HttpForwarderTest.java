package dev.sluice.proxy.forward;

import dev.sluice.proxy.audit.Listener;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.transport.Transport;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCounted;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HttpForwarder}'s own answers on {@link EmbeddedChannel}s: an upstream channel (adopted, as an
 * intercepted tunnel's is) that answers bytes the response decoder rejects. The forwarder answers 502
 * {@code upstream_protocol_error} once, writes nothing of the rejected message, releases it exactly
 * once, closes the upstream channel, and keeps the downstream connection usable.
 */
class HttpForwarderTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private final List<ReferenceCounted> decoded = new ArrayList<>();
    private UpstreamDialer dialer;
    private AuditLog auditLog;
    private ProxyContext context;
    private Policy policy;

    @TempDir
    Path dir;

    @BeforeEach
    void setUp() throws Exception {
        policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: odd.test
                        ports: [8080]
                """, "test.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        dialer = new UpstreamDialer(Transport.nio(), () -> new SelfEndpoints(List.of(), Set.of()), 1_000);
        auditLog = AuditLog.open(dir.resolve("audit.jsonl"));
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, dialer,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null, new EgressBudgets(Clock.systemUTC()));
    }

    @AfterEach
    void tearDown() {
        dialer.close();
        auditLog.close();
    }

    /** A downstream channel with a forwarder that adopted {@code upstream} for odd.test:8080. */
    private EmbeddedChannel downstream(EmbeddedChannel upstream) throws Exception {
        HttpForwarder forwarder = new HttpForwarder(context);
        EmbeddedChannel down = new EmbeddedChannel(forwarder);
        forwarder.adopt(upstream, new ByteCounter(), TargetParser.parseAbsoluteForm("http://odd.test:8080/").target(),
                policy);
        // Sees every message the response decoder produces, before the forwarder does.
        upstream.pipeline().addAfter("codec", "spy", new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof ReferenceCounted counted) {
                    decoded.add(counted);
                }
                ctx.fireChannelRead(msg);
            }
        });
        return down;
    }

    private ForwardRequest get(String path) throws Exception {
        HttpTarget target = TargetParser.parseAbsoluteForm("http://odd.test:8080" + path);
        HttpRequest request = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
        request.headers().set("Host", "odd.test:8080");
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).listener(Listener.EXPLICIT).method("GET")
                .scheme("http").server("odd.test", 8080).urlPath(path);
        return new ForwardRequest(request, target, Decision.allow("extensions.default.allow[0]"), policy, audit,
                true, null);
    }

    /** A decoded message was released (once: a second release would have thrown). */
    private static void assertReleased(ReferenceCounted message) {
        if (message instanceof io.netty.buffer.ByteBufHolder holder
                && holder.content() instanceof io.netty.buffer.EmptyByteBuf) {
            return; // the shared empty buffer is never freed
        }
        assertThat(message.refCnt()).as("released: " + message).isZero();
    }

    private static ByteBuf ascii(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.ISO_8859_1);
    }

    @Test
    void aBadStatusLineIsAnswered502OnceAndTheRejectedMessageIsReleasedOnce() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);

        down.writeInbound(get("/x"), io.netty.handler.codec.http.LastHttpContent.EMPTY_LAST_CONTENT);
        ByteBuf sent = upstream.readOutbound();
        assertThat(sent.toString(StandardCharsets.ISO_8859_1)).startsWith("GET /x HTTP/1.1\r\n");
        sent.release();
        upstream.writeInbound(ascii("SPEAK FRIEND AND ENTER\r\n\r\n"));

        Object answer = down.readOutbound();
        assertThat(answer).isInstanceOf(FullHttpResponse.class);
        FullHttpResponse response = (FullHttpResponse) answer;
        assertThat(response.status().code()).isEqualTo(502);
        String reason = response.headers().get("X-Sluice-Reason");
        String body = response.content().toString(StandardCharsets.UTF_8);
        response.release();
        // Nothing of the rejected message follows the answer.
        assertThat((Object) down.readOutbound()).isNull();

        assertThat(decoded).isNotEmpty();
        assertThat(decoded).allSatisfy(HttpForwarderTest::assertReleased);
        assertThat(upstream.isOpen()).isFalse();
        assertThat(down.isOpen()).isTrue();
        down.checkException();
        upstream.checkException();
        assertThat(reason).isEqualTo("upstream_protocol_error");
        assertThat(body).isEqualTo("sluice: upstream_protocol_error\n");

        assertThat(records).hasSize(1);
        AuditRecord record = records.get(0);
        assertThat(record.reason()).isEqualTo("upstream_protocol_error");
        assertThat(record.statusCode()).isEqualTo(502);
        assertThat(record.decision()).isEqualTo("allow");
        assertThat(record.outcome()).isEqualTo("upstream_failure");
        assertThat(record.error()).isEqualTo("malformed response head from upstream");
        down.finishAndReleaseAll();
    }

    @Test
    void aBrokenChunkAfterTheHeadClosesDownstreamAndIsNeverWritten() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);

        down.writeInbound(get("/chunks"), io.netty.handler.codec.http.LastHttpContent.EMPTY_LAST_CONTENT);
        ((ByteBuf) upstream.readOutbound()).release();
        upstream.writeInbound(ascii("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n"));

        assertThat((Object) down.readOutbound()).isInstanceOf(HttpResponse.class);
        io.netty.handler.codec.http.HttpContent hello = down.readOutbound();
        assertThat(hello.content().toString(StandardCharsets.US_ASCII)).isEqualTo("hello");
        assertThat(hello.decoderResult().isSuccess()).isTrue();
        hello.release();
        assertThat((Object) down.readOutbound()).as("the broken last chunk is not relayed").isNull();
        assertThat(down.isOpen()).isFalse();
        assertThat(upstream.isOpen()).isFalse();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).error()).isEqualTo("malformed response body from upstream");
        assertThat(decoded).allSatisfy(HttpForwarderTest::assertReleased);
        down.finishAndReleaseAll();
    }

    /**
     * A request handed on in the task in which the client's connection closed (inactive, its
     * {@code channelInactive} not yet delivered: the only way a request reaches the forwarder after the
     * client left) gets exactly one record, written when the close is delivered, and its upstream
     * connection is closed.
     */
    @Test
    void aRequestHandedOnAsTheClientClosesIsRecordedOnceAsDownstreamClosed() throws Exception {
        EmbeddedChannel upstream = new EmbeddedChannel();
        EmbeddedChannel down = downstream(upstream);
        down.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof ForwardRequest) {
                    ctx.channel().close();
                    assertThat(ctx.channel().isActive()).isFalse();
                }
                ctx.fireChannelRead(msg);
            }
        });
        down.writeInbound(get("/late"), io.netty.handler.codec.http.LastHttpContent.EMPTY_LAST_CONTENT);
        down.runPendingTasks();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.urlPath()).isEqualTo("/late");
            assertThat(r.error()).isEqualTo("downstream closed before the exchange ended");
            assertThat(r.statusCode()).isNull();
        });
        assertThat(upstream.isOpen()).isFalse();
        upstream.finishAndReleaseAll();
        down.finishAndReleaseAll();
    }
}
