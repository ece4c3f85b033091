package dev.sluice.proxy.request;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.audit.FailingAuditLogs;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.MisdirectedRequestException;
import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.timeout.IdleStateEvent;
import java.util.Optional;
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
                      - host: ws.test
                inspect:
                  inspected.test: {}
                  ws.test: { websocket: refuse }
                limits:
                  max_header_bytes: 1KiB
                  max_connections_per_extension: 1
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
        return channel(context, new ExplicitFront(), false);
    }

    /** The request phase with {@code front}, after a header deadline of 1 s when {@code headerDeadline}. */
    private EmbeddedChannel channel(ProxyContext context, RequestFront front, boolean headerDeadline) {
        InetSocketAddress remote = new InetSocketAddress("127.0.0.1", 40000);
        EmbeddedChannel ch = new EmbeddedChannel() {
            @Override
            protected SocketAddress remoteAddress0() {
                return remote;
            }
        };
        if (headerDeadline) {
            ch.freezeTime();
            ch.pipeline().addLast(HttpPipeline.HEADER_DEADLINE, new HeaderDeadline(1_000));
        }
        HttpPipeline.install(ch.pipeline(), headerDeadline ? HttpPipeline.HEADER_DEADLINE : null,
                context.policies().current().limits(), new ExplicitRequestHandler(context, front), null,
                new ChannelInboundHandlerAdapter() {
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

    @Test
    void aRepeatedHostIs400AndARepeatedProxyAuthorizationIs407EvenWithADefaultExtension() {
        EmbeddedChannel ch = channel();
        String host = send(ch, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nHost: other.test\r\n\r\n");
        assertThat(host).startsWith("HTTP/1.1 400 ").contains("X-Sluice-Reason: malformed_request");
        ch.finishAndReleaseAll();
        ch = channel();
        String auth = send(ch, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n"
                + "Proxy-Authorization: Basic YTpi\r\nProxy-Authorization: Basic YzpE\r\n\r\n");
        assertThat(auth).startsWith("HTTP/1.1 407 ").contains("X-Sluice-Reason: unknown_extension");
        assertThat(handedOn).isEmpty();
        assertThat(records).hasSize(2).allSatisfy(r -> assertThat(r.serverAddress()).isEqualTo("allowed.test"));
        ch.finishAndReleaseAll();
    }

    @Test
    void aTargetWithoutCanonicalFormIs400MalformedTarget() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "CONNECT 1.2.3.999:443 HTTP/1.1\r\nHost: 1.2.3.999:443\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 400 ").contains("X-Sluice-Reason: malformed_target");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.rule()).isEqualTo("target");
            assertThat(r.extension()).isEqualTo("default");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void aHeaderBlockOverTheLimitIs431AndCloses() {
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX-Big: "
                + "x".repeat(2048) + "\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 431 ").contains("X-Sluice-Reason: header_too_large");
        assertThat(records).singleElement().satisfies(r -> assertThat(r.rule()).isEqualTo("limits.max_header_bytes"));
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void aConnectionOverItsExtensionsCapIs503ConnectionLimitAndCloses() {
        assertThat(context.connections().tryAcquire("default", Listener.EXPLICIT.label(), 1)).isTrue();
        EmbeddedChannel ch = channel();
        String answer = send(ch, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 503 ").contains("X-Sluice-Reason: connection_limit");
        assertThat(handedOn).isEmpty();
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void aWebSocketHandshakeToAHostWhoseWebsocketIsRefuseIs403WebsocketRefused() {
        RequestFront explicit = new ExplicitFront();
        RequestFront intercepting = new RequestFront() {
            @Override
            public Listener listener() {
                return explicit.listener();
            }

            @Override
            public Optional<Extension> identify(Policy policy, HttpRequest request) {
                return explicit.identify(policy, request);
            }

            @Override
            public HttpTarget target(HttpRequest request) throws MalformedTargetException, OriginFormException,
                    MisdirectedRequestException {
                return explicit.target(request);
            }

            @Override
            public Optional<InspectedHost> intercepted(Policy policy) {
                return policy.inspected("ws.test");
            }

            @Override
            public boolean readsInsideTls() {
                return true;
            }
        };
        EmbeddedChannel ch = channel(context, intercepting, false);
        String answer = send(ch, "GET http://ws.test/chat HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\n"
                + "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
        assertThat(answer).startsWith("HTTP/1.1 403 ").contains("X-Sluice-Reason: websocket_refused");
        assertThat(handedOn).isEmpty();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.rule()).isEqualTo(Handoff.RULE_WEBSOCKET);
            assertThat(r.error()).isEqualTo("inspect.ws.test.websocket: refuse");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void aHeadNotCompleteWithinTheHeaderTimeoutIsRecordedAndClosed() {
        EmbeddedChannel ch = channel(context, new ExplicitFront(), true);
        ch.writeInbound(Unpooled.copiedBuffer("GET http://allowed.test/ HTT", StandardCharsets.US_ASCII));
        ch.advanceTimeBy(1_000, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertThat(answer(ch)).isEmpty();
        assertThat(ch.isOpen()).isFalse();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("header_timeout");
            assertThat(r.error()).startsWith("no complete request head within ");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void aHeadThatStallsUntilTheIdleTimeoutIsRecordedAndClosed() {
        EmbeddedChannel ch = channel(context, new ExplicitFront(), true);
        ch.writeInbound(Unpooled.copiedBuffer("GET http://allowed.test/ HTT", StandardCharsets.US_ASCII));
        ch.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        assertThat(ch.isOpen()).isFalse();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("idle_timeout");
            assertThat(r.error()).startsWith("request head incomplete: no byte for ");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void aBrokenChunkedBodyAbortsTheExchangeWith400MalformedRequestAndNothingMoreGoesOn() {
        EmbeddedChannel ch = channel();
        send(ch, "POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n");
        int before = handedOn.size();
        send(ch, "ZZ-not-a-size\r\n");
        assertThat(handedOn.subList(before, handedOn.size())).singleElement()
                .isInstanceOfSatisfying(ExchangeControl.Abort.class, abort -> {
                    assertThat(abort.decision().reason().label()).isEqualTo("malformed_request");
                    assertThat(abort.detail()).isEqualTo("malformed chunked request body");
                });
        ch.finishAndReleaseAll();
    }

    @Test
    void aFinWhileTheBodyIsExpectedEndsTheExchangeAtOnce() {
        EmbeddedChannel ch = channel();
        send(ch, "POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 10\r\n\r\n01234");
        assertThat(handedOn).first().isInstanceOf(ForwardRequest.class);
        ch.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertThat(handedOn).last().isInstanceOf(ExchangeControl.ClientClosedMidBody.class);
        ch.runPendingTasks();
        assertThat(ch.isOpen()).isFalse();
        assertThat(answer(ch)).isEmpty();
        ch.finishAndReleaseAll();
    }

    @Test
    void whileTheAuditLogCannotWriteARequestIs503AuditUnavailableAndCloses() {
        AuditLog failing = FailingAuditLogs.unhealthy(dir);
        try {
            ProxyContext unrecorded = new ProxyContext(context.policies(), failing, context.audit(), context.dialer(),
                    context.clock(), context.metrics(), context.connections(), null, context.budgets());
            EmbeddedChannel ch = channel(unrecorded);
            String answer = send(ch, "GET http://allowed.test/a HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
            assertThat(answer).startsWith("HTTP/1.1 503 ").contains("X-Sluice-Reason: audit_unavailable");
            assertThat(handedOn).isEmpty();
            assertThat(records).singleElement().satisfies(r -> {
                assertThat(r.reason()).isEqualTo("audit_unavailable");
                assertThat(r.serverAddress()).isEqualTo("allowed.test");
                assertThat(r.urlPath()).isEqualTo("/a");
                assertThat(r.extension()).isEqualTo("default");
            });
            ch.runPendingTasks();
            assertThat(ch.isOpen()).isFalse();
            ch.finishAndReleaseAll();
        } finally {
            failing.close();
        }
    }
}
