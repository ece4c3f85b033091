package dev.sluice.proxy.tunnel;

import dev.sluice.proxy.audit.Listener;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.transport.Transport;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.decision.TunnelMode;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpResponseEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The tunnel set-up phase's own answers on an EmbeddedChannel. */
class ConnectHandlerTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
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
                      - host: inspected.test
                inspect:
                  inspected.test: {}
                """, "test.yaml");
        SluiceMetrics metrics = new SluiceMetrics();
        dialer = new UpstreamDialer(Transport.nio(), () -> new SelfEndpoints(List.of(), Set.of()), 1_000);
        auditLog = AuditLog.open(dir.resolve("audit.jsonl"));
        // No interception material in this context (interception == null).
        context = new ProxyContext(new PolicyHolder(policy, Clock.systemUTC()), auditLog, records::add, dialer,
                Clock.systemUTC(), metrics, new ConnectionLimits(metrics), null, new EgressBudgets(Clock.systemUTC()));
    }

    @AfterEach
    void tearDown() {
        dialer.close();
        auditLog.close();
    }

    @Test
    void anInterceptTunnelWithoutInterceptionIs503AndIsNeverDialledNorRelayed() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new HttpResponseEncoder(), new ConnectHandler(context));
        Extension ext = policy.extension("default").orElseThrow();
        Target target = TargetParser.parseAuthority("inspected.test:443");
        Decision decision = Decider.decideTunnel(policy, ext, target);
        assertThat(decision.tunnelMode()).isEqualTo(TunnelMode.INTERCEPT);
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).extension("default").method("CONNECT")
                .server(target.host(), target.port());
        ch.writeInbound(new ConnectRequest(target, decision, policy, audit, context.traffic(policy, ext, decision),
                "default", Listener.EXPLICIT));
        ch.runPendingTasks();

        StringBuilder answer = new StringBuilder();
        for (Object o; (o = ch.readOutbound()) != null; ) {
            answer.append(((ByteBuf) o).toString(StandardCharsets.US_ASCII));
            ((ByteBuf) o).release();
        }
        assertThat(answer.toString()).startsWith("HTTP/1.1 503 ").contains("X-Sluice-Reason: interception_unavailable");
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("interception_unavailable");
            assertThat(r.peerAddress()).as("never dialled").isNull();
            assertThat(r.bytesSent()).isZero();
        });
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }
}
