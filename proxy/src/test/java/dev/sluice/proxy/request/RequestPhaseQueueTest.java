package dev.sluice.proxy.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.sluice.proxy.approval.Approvals;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeSequencer;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The request phase's sequencing on an EmbeddedChannel (decoder → encoder → request phase → a sink in
 * place of the forwarder): pipelined requests wait for the exchange in flight and go on in order, a
 * request held for approval (admin backend) waits with what follows it and is then handed on, refused,
 * or dropped with its record when the client left, and a queue that overflows closes the connection.
 */
class RequestPhaseQueueTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private final List<Object> handedOn = new ArrayList<>();
    private AuditLog auditLog;
    private Approvals approvals;
    private ProxyContext context;

    @TempDir
    Path dir;

    @BeforeEach
    void setUp() throws Exception {
        Policy policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: allowed.test
                approvals:
                  backend: admin
                  timeout: 5m
                  scopes: [once]
                """, "test.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        auditLog = AuditLog.open(dir.resolve("audit.jsonl")); // its health only; records go to `records`
        approvals = new Approvals(() -> { });
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, null,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null, new EgressBudgets(Clock.systemUTC()),
                approvals);
    }

    @AfterEach
    void tearDown() {
        handedOn.forEach(ReferenceCountUtil::release);
        approvals.close();
        auditLog.close();
    }

    private EmbeddedChannel channel() {
        InetSocketAddress remote = new InetSocketAddress("127.0.0.1", 40000);
        EmbeddedChannel ch = new EmbeddedChannel() {
            @Override
            protected SocketAddress remoteAddress0() {
                return remote;
            }
        };
        HttpPipeline.install(ch.pipeline(), null, context.policies().current().limits(),
                new ExplicitRequestHandler(context), null, new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        handedOn.add(msg);
                    }
                });
        return ch;
    }

    private static String answer(EmbeddedChannel ch) {
        StringBuilder out = new StringBuilder();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            ByteBuf buf = (ByteBuf) o;
            out.append(buf.toString(StandardCharsets.US_ASCII));
            buf.release();
        }
        return out.toString();
    }

    private static void send(EmbeddedChannel ch, String bytes) {
        ch.writeInbound(Unpooled.copiedBuffer(bytes, StandardCharsets.US_ASCII));
    }

    /** What the forwarder does when the exchange's answer is complete. */
    private static void exchangeComplete(EmbeddedChannel ch) {
        ChannelHandlerContext phase = ch.pipeline().context(ExchangeSequencer.class);
        ((ExchangeSequencer) phase.handler()).exchangeComplete(phase);
    }

    /** Answers the one question waiting on the admin backend and runs the answer on the channel's loop. */
    private void answerTheQuestion(EmbeddedChannel ch, boolean allow) {
        assertThat(approvals.pending()).hasSize(1);
        assertThat(approvals.answer(approvals.pending().get(0).id(), allow, "once", "tester").join())
                .isEqualTo(Approvals.AnswerResult.ANSWERED);
        ch.runPendingTasks();
    }

    private List<String> forwardedPaths() {
        return handedOn.stream().filter(m -> m instanceof ForwardRequest)
                .map(m -> ((ForwardRequest) m).request().uri()).toList();
    }

    @Test
    void aPipelinedRequestWaitsForTheExchangeInFlightThenGoesOn() {
        EmbeddedChannel ch = channel();
        send(ch, "GET http://allowed.test/a HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
                + "GET http://allowed.test/b HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assertThat(forwardedPaths()).containsExactly("/a");
        assertThat(ch.config().isAutoRead()).as("reading paused while /a is in flight").isFalse();
        exchangeComplete(ch);
        assertThat(forwardedPaths()).containsExactly("/a", "/b");
        assertThat(handedOn.get(handedOn.size() - 1)).isInstanceOf(LastHttpContent.class);
        exchangeComplete(ch);
        assertThat(ch.config().isAutoRead()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void aQueueOverItsBoundClosesTheConnection() {
        EmbeddedChannel ch = channel();
        StringBuilder pipelined = new StringBuilder("GET http://allowed.test/first HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        // Each waiting GET is two messages (its head and its empty last content).
        for (int i = 0; i <= RequestQueue.MAX_QUEUED_MESSAGES / 2; i++) {
            pipelined.append("GET http://allowed.test/").append(i).append(" HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        }
        send(ch, pipelined.toString());
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        assertThat(forwardedPaths()).containsExactly("/first");
        ch.finishAndReleaseAll();
    }

    @Test
    void aHeldRequestWaitsWithWhatFollowsItAndGoesOnWhenGranted() {
        EmbeddedChannel ch = channel();
        send(ch, "GET http://held.test/x HTTP/1.1\r\nHost: held.test\r\n\r\n"
                + "GET http://allowed.test/after HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assertThat(handedOn).isEmpty();
        assertThat(answer(ch)).isEmpty();
        assertThat(ch.config().isAutoRead()).isFalse();
        answerTheQuestion(ch, true);
        assertThat(forwardedPaths()).containsExactly("/x");
        exchangeComplete(ch);
        assertThat(forwardedPaths()).containsExactly("/x", "/after");
        ch.finishAndReleaseAll();
    }

    @Test
    void aDeniedHeldRequestIs403WithItsMissAndTheNextRequestGoesOn() {
        EmbeddedChannel ch = channel();
        send(ch, "GET http://held.test/x HTTP/1.1\r\nHost: held.test\r\n\r\n"
                + "GET http://allowed.test/after HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        answerTheQuestion(ch, false);
        assertThat(answer(ch)).startsWith("HTTP/1.1 403 ").contains("X-Sluice-Reason: not_allowlisted");
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("not_allowlisted");
            assertThat(r.statusCode()).isEqualTo(403);
        });
        assertThat(forwardedPaths()).containsExactly("/after");
        assertThat(ch.isOpen()).isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void aHeldRequestWhoseClientLeftIsDroppedWithItsRecord() {
        EmbeddedChannel ch = channel();
        send(ch, "GET http://held.test/x HTTP/1.1\r\nHost: held.test\r\n\r\n");
        ch.close();
        answerTheQuestion(ch, true);
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("not_allowlisted");
            assertThat(r.error()).isEqualTo(ApprovalHold.CLIENT_CLOSED);
        });
        ch.finishAndReleaseAll();
    }

    /**
     * A pipelined request that is held for approval when the exchange before it completes: the replay
     * stops at the hold (it used to put the held request's own last content back into the queue it was
     * replaying, for ever, on the event loop), and the request goes on when granted.
     */
    @Test
    void aPipelinedRequestHeldWhenItsTurnComesWaitsForItsAnswer() {
        EmbeddedChannel ch = channel();
        send(ch, "GET http://allowed.test/a HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
                + "GET http://held.test/x HTTP/1.1\r\nHost: held.test\r\n\r\n"
                + "GET http://allowed.test/after HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assertThat(forwardedPaths()).containsExactly("/a");
        assertTimeoutPreemptively(Duration.ofSeconds(10), () -> exchangeComplete(ch),
                "the replay of the queue never ended");
        assertThat(forwardedPaths()).containsExactly("/a");
        answerTheQuestion(ch, true);
        assertThat(forwardedPaths()).containsExactly("/a", "/x");
        exchangeComplete(ch);
        assertThat(forwardedPaths()).containsExactly("/a", "/x", "/after");
        ch.finishAndReleaseAll();
    }
}
