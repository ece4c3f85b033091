package dev.sluice.proxy.transparent;

import dev.sluice.proxy.exchange.InterceptionPath;
import dev.sluice.proxy.tls.ClientHelloParserTest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.transport.Transport;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The peek phase on an {@link EmbeddedChannel}: bytes arriving in pieces, the hand-over to the TLS and
 * HTTP phases, and the refusals it answers itself. Only paths that never dial are exercised here (the
 * dialling paths run over real sockets in {@link TransparentListenerTest} and {@link NamespaceTest}).
 */
class FirstBytesHandlerTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
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
                  sandbox:
                    sources: ["10.200.1.2/32"]
                    allow:
                      - host: allowed.test
                      - host: inspected.test
                inspect:
                  inspected.test: {}
                limits:
                  max_header_bytes: 4096
                """, "test.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        dialer = new UpstreamDialer(Transport.nio(), () -> new SelfEndpoints(List.of(), Set.of()), 1_000);
        auditLog = AuditLog.open(dir.resolve("audit.jsonl")); // its health only; records go to `records`
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, dialer,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null,
                new dev.sluice.proxy.limits.EgressBudgets(Clock.systemUTC()));
    }

    @AfterEach
    void tearDown() {
        dialer.close();
        auditLog.close();
    }

    /** An embedded channel that looks like a TCP connection from {@code client} to 10.200.1.1:443. */
    private EmbeddedChannel channel(String client) {
        InetSocketAddress remote = new InetSocketAddress(client, 40000);
        InetSocketAddress local = new InetSocketAddress("10.200.1.1", 443);
        EmbeddedChannel ch = new EmbeddedChannel() {
            @Override
            protected SocketAddress remoteAddress0() {
                return remote;
            }

            @Override
            protected SocketAddress localAddress0() {
                return local;
            }
        };
        ch.pipeline().addLast(TransparentChannelInitializer.PEEK,
                new FirstBytesHandler(context, InterceptionPath.NONE, 4096));
        return ch;
    }

    @Test
    void clientHelloByteByByte() throws Exception {
        EmbeddedChannel ch = channel("10.200.1.2");
        byte[] hello = ClientHelloParserTest.clientHello("denied.test");
        for (int i = 0; i < hello.length - 1; i++) {
            ch.writeInbound(Unpooled.wrappedBuffer(hello, i, 1));
            assertThat(records).as("after %d bytes", i + 1).isEmpty();
        }
        assertThat(ch.isOpen()).isTrue();
        ch.writeInbound(Unpooled.wrappedBuffer(hello, hello.length - 1, 1));
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.tlsSni()).isEqualTo("denied.test");
            assertThat(r.reason()).isEqualTo("not_allowlisted");
            assertThat(r.extension()).isEqualTo("sandbox");
            assertThat(r.listener()).isEqualTo("transparent");
            assertThat(r.serverPort()).isEqualTo(443);
            assertThat(r.tlsMode()).isEqualTo("tunnel");
        });
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    /**
     * The decision says the connection is to be intercepted; a listener whose interception path cannot
     * do that refuses it with a reason and a record, and never dials and relays it blind.
     */
    @Test
    void anInspectedHostWithoutAnInterceptionPathIsRefusedNotRelayedBlind() throws Exception {
        EmbeddedChannel ch = channel("10.200.1.2");
        ch.writeInbound(Unpooled.wrappedBuffer(ClientHelloParserTest.clientHello("inspected.test")));
        ch.runPendingTasks();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.tlsSni()).isEqualTo("inspected.test");
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("interception_unavailable");
            assertThat(r.peerAddress()).isNull();
        });
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void clientHelloFragmentedAcrossRecordsAndReads() throws Exception {
        EmbeddedChannel ch = channel("10.200.1.2");
        byte[] cut = ClientHelloParserTest.refragment(ClientHelloParserTest.clientHello("other.test"), 50);
        for (int i = 0; i < cut.length; i += 7) {
            ch.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(cut, i, Math.min(cut.length, i + 7))));
        }
        assertThat(records).singleElement().satisfies(r -> assertThat(r.tlsSni()).isEqualTo("other.test"));
        ch.finishAndReleaseAll();
    }

    @Test
    void httpIsHandedToTheExplicitRequestPhase() {
        EmbeddedChannel ch = channel("10.200.1.2");
        ch.writeInbound(Unpooled.copiedBuffer("GE", StandardCharsets.US_ASCII));
        assertThat(ch.pipeline().get(TransparentChannelInitializer.PEEK)).isNotNull();
        ch.writeInbound(Unpooled.copiedBuffer("T /p HTTP/1.1\r\nHost: denied.test\r\n\r\n", StandardCharsets.US_ASCII));
        assertThat(ch.pipeline().get(TransparentChannelInitializer.PEEK)).isNull();
        assertThat(ch.pipeline().names()).contains(HttpPipeline.DECODER, HttpPipeline.REQUEST,
                HttpPipeline.FORWARD);
        ByteBuf answer = ch.readOutbound();
        try {
            assertThat(answer.toString(StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 403 ")
                    .contains("X-Sluice-Reason: not_allowlisted").doesNotContain("Proxy-Authenticate");
        } finally {
            answer.release();
        }
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.listener()).isEqualTo("transparent");
            assertThat(r.extension()).isEqualTo("sandbox");
            assertThat(r.serverAddress()).isEqualTo("denied.test");
            assertThat(r.serverPort()).isEqualTo(443); // the port connected to, not Host's default
            assertThat(r.urlPath()).isEqualTo("/p");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void garbageIsClosed() {
        EmbeddedChannel ch = channel("10.200.1.2");
        ch.writeInbound(Unpooled.copiedBuffer("\u0000\u0001binary", StandardCharsets.ISO_8859_1));
        assertThat(ch.isOpen()).isFalse();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("not_http_or_tls");
            assertThat(r.rule()).isEqualTo(FirstBytesHandler.PEEK_RULE);
            assertThat(r.serverAddress()).isEqualTo("10.200.1.1");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void longTokenWithoutSpaceIsNotHttp() {
        EmbeddedChannel ch = channel("10.200.1.2");
        ch.writeInbound(Unpooled.copiedBuffer("ABCDEFGHIJKLMNOPQRSTUVWXYZ", StandardCharsets.US_ASCII));
        assertThat(records).singleElement().satisfies(r -> assertThat(r.reason()).isEqualTo("not_http_or_tls"));
        ch.finishAndReleaseAll();
    }

    @Test
    void finBeforeTheFirstBytesAreComplete() {
        EmbeddedChannel ch = channel("10.200.1.2");
        ch.writeInbound(Unpooled.copiedBuffer("POS", StandardCharsets.US_ASCII));
        ch.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("not_http_or_tls");
            assertThat(r.error()).isEqualTo("client closed after 3 bytes");
        });
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void unknownSourceIsClosedBeforeAnyByte() {
        EmbeddedChannel ch = channel("10.200.9.9");
        assertThat(ch.isOpen()).isFalse();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.reason()).isEqualTo("unknown_extension");
            assertThat(r.extension()).isNull();
            assertThat(r.clientAddress()).isEqualTo("10.200.9.9");
        });
        ch.finishAndReleaseAll();
    }

    @Test
    void httpRequestLineClassifier() {
        assertThat(FirstBytesHandler.httpRequestLine(Unpooled.copiedBuffer("GET ", StandardCharsets.US_ASCII))).isEqualTo(1);
        assertThat(FirstBytesHandler.httpRequestLine(Unpooled.copiedBuffer("GET", StandardCharsets.US_ASCII))).isZero();
        assertThat(FirstBytesHandler.httpRequestLine(Unpooled.copiedBuffer(" GET", StandardCharsets.US_ASCII))).isEqualTo(-1);
        assertThat(FirstBytesHandler.httpRequestLine(Unpooled.copiedBuffer("get ", StandardCharsets.US_ASCII))).isEqualTo(-1);
        assertThat(FirstBytesHandler.httpRequestLine(Unpooled.copiedBuffer("SSH-2.0", StandardCharsets.US_ASCII))).isEqualTo(-1);
    }
}
