package dev.sluice.proxy.request;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.transport.Transport;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.decision.TunnelMode;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The request phase's own answers on an EmbeddedChannel (decoder → encoder → request phase → a sink in
 * place of the forwarder): what it refuses itself, with which status, reason and record, and what it
 * hands on (nothing, for every refusal).
 */
class RequestPhaseAnswersTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private final List<Object> handedOn = new ArrayList<>();
    private UpstreamDialer dialer;
    private AuditLog auditLog;
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
                      - host: inspected.test
                        ports: [443]
                        methods: [POST]
                inspect:
                  inspected.test: {}
                """, "test.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        dialer = new UpstreamDialer(Transport.nio(), () -> new SelfEndpoints(List.of(), Set.of()), 1_000);
        auditLog = AuditLog.open(dir.resolve("audit.jsonl")); // its health only; records go to `records`
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, dialer,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null, new EgressBudgets(Clock.systemUTC()));
    }

    @AfterEach
    void tearDown() {
        handedOn.forEach(ReferenceCountUtil::release);
        dialer.close();
        auditLog.close();
    }

    private EmbeddedChannel channel() {
        return channel(context);
    }

    private EmbeddedChannel channel(ProxyContext context) {
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

    private String send(EmbeddedChannel ch, String request) {
        ch.writeInbound(Unpooled.copiedBuffer(request, StandardCharsets.US_ASCII));
        return answer(ch);
    }

    @Test
    void aDeniedHostIs403WithItsReasonAndNothingHandedOn() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 403 ").contains("X-Sluice-Reason: not_allowlisted")
                .endsWith("sluice: not_allowlisted\n");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("not_allowlisted");
            assertThat(r.rule()).isEqualTo("implicit-deny");
            assertThat(r.statusCode()).isEqualTo(403);
        });
        assertThat(ch.isOpen()).as("a refusal without a body keeps the connection").isTrue();
        ch.finishAndReleaseAll();
    }

    @Test
    void anOriginFormRequestIs400MalformedRequest() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("X-Sluice-Reason: malformed_request");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.rule()).isEqualTo("http.request_target"));
        ch.finishAndReleaseAll();
    }

    @Test
    void wrongCredentialsAre407AndNeverTheDefaultExtension() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n"
                + "Proxy-Authorization: Basic bm9ib2R5Ondyb25n\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 407 ").containsIgnoringCase("Proxy-Authenticate: Basic realm=\"sluice\"");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.reason()).isEqualTo("unknown_extension"));
        ch.finishAndReleaseAll();
    }

    @Test
    void anUpgradeToAnAllowedHostIs501AndNothingIsHandedOn() {
        EmbeddedChannel ch = channel();
        // A WebSocket handshake goes on (WebSocketTest); a malformed one (no version), h2c or TLS/1.0 does not.
        String answer = send(ch, "GET http://allowed.test/ws HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade\r\n"
                + "Upgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 501 ").contains("X-Sluice-Reason: upgrade_not_supported");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.rule()).isEqualTo("http.upgrade"));
        ch.finishAndReleaseAll();
    }

    @Test
    void contentLengthWithTransferEncodingIs400AmbiguousFramingAndCloses() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 3\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("X-Sluice-Reason: ambiguous_framing");
        assertThat(handedOn).noneMatch(m -> m instanceof ForwardRequest);
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void anAllowedRequestGoesOnInOriginFormWithHostRebuiltAndHopByHopRemoved() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET http://allowed.test/a?b=1 HTTP/1.1\r\nHost: evil.test\r\n"
                + "Connection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: timeout=5\r\n\r\n");
        assertThat(answer).isEmpty();
        assertThat(handedOn).first().isInstanceOfSatisfying(ForwardRequest.class, forward -> {
            assertThat(forward.request().uri()).isEqualTo("/a?b=1");
            assertThat(forward.request().headers().get("Host")).isEqualTo("allowed.test");
            assertThat(forward.request().headers().contains("X-Secret")).isFalse();
            assertThat(forward.request().headers().contains("Keep-Alive")).isFalse();
            assertThat(forward.request().headers().contains("Connection")).isFalse();
        });
        assertThat(handedOn).last().isInstanceOf(HttpContent.class);
        ch.finishAndReleaseAll();
    }

    @Test
    void aConnectToAnInspectedHostGoesOnAsAnInterceptTunnelDespiteItsMethodRule() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "CONNECT inspected.test:443 HTTP/1.1\r\nHost: inspected.test:443\r\n\r\n");
        assertThat(answer).isEmpty();
        assertThat(handedOn).first().isInstanceOfSatisfying(ConnectRequest.class, connect -> {
            assertThat(connect.decision().tunnelMode()).isEqualTo(TunnelMode.INTERCEPT);
            assertThat(connect.decision().permits()).isTrue();
            assertThat(connect.listener()).isEqualTo(Listener.EXPLICIT);
        });
        assertThat(ch.pipeline().get(HttpPipeline.DECODER)).as("raw bytes from here on").isNull();
        ch.finishAndReleaseAll();
    }

    @Test
    void aRefusedRequestWhoseBodyStillArrivesIsAnsweredAtOnceAndClosedAfterThisProxysLinger() {
        Duration linger = Duration.ofSeconds(30);
        ProxyContext lingering = new ProxyContext(context.policies(), context.auditLog(), context.audit(),
                context.dialer(), context.clock(), context.metrics(), context.connections(), null, context.budgets(),
                null, null, null, linger);
        EmbeddedChannel ch = channel(lingering);
        ch.freezeTime();
        String answer = send(ch, "POST http://other.test/ HTTP/1.1\r\nHost: other.test\r\nContent-Length: 10\r\n\r\n01234");
        assertThat(answer).startsWith("HTTP/1.1 403 ").containsIgnoringCase("Connection: close");
        assertThat(records).singleElement().satisfies(r -> assertThat(r.reason()).isEqualTo("not_allowlisted"));
        ch.advanceTimeBy(linger.toMillis() - 1, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertThat(ch.isOpen()).as("still reading and dropping the body within the linger").isTrue();
        ch.advanceTimeBy(1, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        ch.runPendingTasks();
        assertThat(ch.isOpen()).as("closed when this proxy's linger ran out").isFalse();
        assertThat(handedOn).isEmpty();
        ch.finishAndReleaseAll();
    }
}
