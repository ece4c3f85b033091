package dev.sluice.proxy.transparent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.InterceptionPath;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.decision.TunnelMode;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetSocketAddress;
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
 * {@link TransparentTunnelHandler} on an {@link EmbeddedChannel}, given the {@link TransparentTunnelHandler.Start}
 * the peek phase hands it, with a policy parsed by the policy loader and no dialer (none of these cases
 * may dial): each refusal closes the connection with one audit record and its reason, an inspected host
 * goes to the interception path with the ClientHello and every byte after it, and every buffer it was
 * given is released or handed on. The blind tunnel (a real dial and {@code Tunnels.join}) needs sockets:
 * {@code TransparentListenerTest}.
 */
class TransparentTunnelHandlerAnswersTest {

    private static final InetSocketAddress ORIGINAL = new InetSocketAddress("203.0.113.7", 443);

    @TempDir
    Path dir;
    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();
    private AuditLog auditLog;
    private ProxyContext context;
    private Policy policy;

    @BeforeEach
    void setUp() throws Exception {
        policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: blind.test
                      - host: inspected.test
                inspect:
                  inspected.test: {}
                limits:
                  max_connections_per_extension: 1
                  egress_budget: 1MiB
                  egress_budget_window: 1h
                """, "transparent.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        auditLog = AuditLog.open(dir.resolve("audit.jsonl"));
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, null,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null, new EgressBudgets(Clock.systemUTC()));
    }

    @AfterEach
    void tearDown() {
        auditLog.close();
    }

    private ByteBuf bytes(String text) {
        ByteBuf buf = Unpooled.copiedBuffer(text, StandardCharsets.US_ASCII);
        given.add(buf);
        return buf;
    }

    private TransparentTunnelHandler.Start start(String sni) {
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).extension("default");
        return new TransparentTunnelHandler.Start(bytes("client-hello"), sni, ORIGINAL,
                policy.extension("default").orElseThrow(), audit);
    }

    private void assertAllGivenReleased() {
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("refCnt of a buffer given to the phase").isZero());
    }

    /** Runs {@code start} through a fresh handler; answers the channel, closed by a refusal. */
    private EmbeddedChannel refused(InterceptionPath path, TransparentTunnelHandler.Start start) {
        EmbeddedChannel ch = new EmbeddedChannel(new TransparentTunnelHandler(context, path));
        ch.writeInbound(start);
        ch.runPendingTasks();
        assertThat(ch.isOpen()).as("a refusal closes the connection: no HTTP to answer with").isFalse();
        assertThat((Object) ch.readOutbound()).as("nothing is written to the client").isNull();
        assertAllGivenReleased();
        return ch;
    }

    private AuditRecord onlyRecord() {
        assertThat(records).hasSize(1);
        return records.get(0);
    }

    @Test
    void withoutSniAndNoCidrRuleTheConnectionIsRefusedNoSni() {
        refused(InterceptionPath.NONE, start(null));
        AuditRecord r = onlyRecord();
        assertThat(r.decision()).isEqualTo("deny");
        assertThat(r.reason()).isEqualTo("no_sni");
        assertThat(r.serverAddress()).isEqualTo("203.0.113.7");
        assertThat(r.serverPort()).isEqualTo(443);
        assertThat(r.tlsMode()).isEqualTo("tunnel");
    }

    @Test
    void anSniWithoutCanonicalFormIsRefusedMalformedTarget() {
        refused(InterceptionPath.NONE, start("bad_name..test"));
        AuditRecord r = onlyRecord();
        assertThat(r.reason()).isEqualTo("malformed_target");
        assertThat(r.rule()).isEqualTo("tls.sni");
        assertThat(r.tlsSni()).isEqualTo("bad_name..test");
    }

    @Test
    void anSniOffTheAllowlistIsRefusedNotAllowlistedAndStrayBytesAreReleased() {
        EmbeddedChannel ch = new EmbeddedChannel(new TransparentTunnelHandler(context, InterceptionPath.NONE));
        ch.writeInbound(bytes("before the start: not this handler's to keep"));
        ch.writeInbound(start("other.test"));
        assertThat(ch.isOpen()).isFalse();
        assertAllGivenReleased();
        AuditRecord r = onlyRecord();
        assertThat(r.reason()).isEqualTo("not_allowlisted");
        assertThat(r.serverAddress()).isEqualTo("other.test");
        assertThat(r.tlsSni()).isEqualTo("other.test");
    }

    @Test
    void anInspectedHostWithoutInterceptionIsRefusedRatherThanRelayedBlind() {
        refused(InterceptionPath.NONE, start("inspected.test"));
        AuditRecord r = onlyRecord();
        assertThat(r.reason()).isEqualTo("interception_unavailable");
        assertThat(r.rule()).isEqualTo("inspect");
        assertThat(r.error()).isEqualTo("interception is not available on this listener");
        assertThat(r.peerAddress()).as("never dialled").isNull();
    }

    @Test
    void anInspectedHostGoesToTheInterceptionPathWithTheHelloAndEveryByteAfterIt() {
        List<ConnectRequest> requests = new ArrayList<>();
        List<String> handed = new ArrayList<>();
        InterceptionPath path = new InterceptionPath() {
            @Override
            public boolean available() {
                return true;
            }

            @Override
            public void intercept(ChannelHandlerContext ctx, ConnectRequest request, ByteBuf clientHello) {
                requests.add(request);
                handed.add(clientHello.toString(StandardCharsets.US_ASCII));
                clientHello.release();
            }
        };
        EmbeddedChannel ch = new EmbeddedChannel(new TransparentTunnelHandler(context, path));
        ch.writeInbound(start("inspected.test"));
        assertThat(requests).singleElement().satisfies(r -> {
            assertThat(r.target().host()).isEqualTo("inspected.test");
            assertThat(r.target().port()).isEqualTo(443);
            assertThat(r.decision().tunnelMode()).isEqualTo(TunnelMode.INTERCEPT);
            assertThat(r.extension()).isEqualTo("default");
        });
        assertThat(handed).containsExactly("client-hello");
        assertThat(ch.pipeline().get(TransparentTunnelHandler.class)).as("the handler left the pipeline").isNull();
        assertThat(records).as("the interception path writes the record").isEmpty();
        assertThat(ch.isOpen()).isTrue();
        assertAllGivenReleased();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void anExtensionAtItsConnectionCapIsRefusedConnectionLimit() {
        assertThat(context.connections().tryAcquire("default", TransparentFront.LISTENER.label(), 1)).isTrue();
        refused(InterceptionPath.NONE, start("blind.test"));
        AuditRecord r = onlyRecord();
        assertThat(r.reason()).isEqualTo("connection_limit");
        assertThat(r.rule()).isEqualTo("limits.max_connections_per_extension");
    }

    @Test
    void anExtensionWhoseEgressBudgetIsSpentIsRefusedAndItsSlotIsGivenBack() {
        context.budgets().account("default", Duration.ofHours(1)).add(2L << 20);
        refused(InterceptionPath.NONE, start("blind.test"));
        AuditRecord r = onlyRecord();
        assertThat(r.reason()).isEqualTo("egress_budget");
        assertThat(r.rule()).isEqualTo("limits.egress_budget");
        assertThat(context.connections().tryAcquire("default", TransparentFront.LISTENER.label(), 1))
                .as("the closed connection released its slot").isTrue();
    }
}
