package dev.sluice.proxy.tunnel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.tls.ClientHelloParserTest;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link TunnelStartGate} on an {@link EmbeddedChannel} (the client's side of a blind CONNECT tunnel; the
 * upstream is another EmbeddedChannel), fed real ClientHellos of the JDK's TLS client, with a policy
 * parsed by the policy loader: what it lets on to the relay (the held buffers as they are, once the
 * ClientHello is complete) and what it refuses (both channels closed, nothing passed on, the record's
 * reason, error and {@code tls.sni}).
 */
class TunnelStartGateAnswersTest {

    private static final int MAX = 16 * 1024;

    private final List<AuditRecord> records = new ArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();
    private Policy policy;
    private Extension extension;
    private EmbeddedChannel upstream;
    private AuditEvent audit;

    @BeforeEach
    void setUp() throws Exception {
        policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: origin.test, ports: [443] }
                      - { host: cdn.test, ports: [443] }
                      - { host: counted.test, ports: [8022] }
                """, "gate.yaml");
        extension = policy.extension("default").orElseThrow();
        upstream = new EmbeddedChannel();
        audit = new AuditEvent(records::add, Clock.systemUTC()).extension("default").method("CONNECT");
    }

    private EmbeddedChannel gate(String authority) throws Exception {
        Target target = TargetParser.parseAuthority(authority);
        Decision tunnel = Decider.decideTunnel(policy, extension, target);
        audit.server(target.host(), target.port()).decision(tunnel);
        return new EmbeddedChannel(new TunnelStartGate(policy, extension, target, tunnel, audit, upstream, MAX));
    }

    private ByteBuf buf(byte[] bytes, int from, int to) {
        ByteBuf b = Unpooled.wrappedBuffer(Arrays.copyOfRange(bytes, from, to));
        given.add(b);
        return b;
    }

    private AuditRecord record() {
        audit.emit();
        assertThat(records).hasSize(1);
        return records.get(0);
    }

    private void assertRefused(EmbeddedChannel ch) {
        assertThat(ch.isOpen()).isFalse();
        assertThat(upstream.isOpen()).as("the upstream channel closes too").isFalse();
        assertThat((Object) ch.readInbound()).as("nothing goes on to the relay").isNull();
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("a held buffer").isZero());
    }

    @Test
    void aClientHelloNamingTheConnectHostGoesOnAsItCameOnceCompleteAndTheGateStepsAside() throws Exception {
        EmbeddedChannel ch = gate("origin.test:443");
        byte[] hello = ClientHelloParserTest.clientHello("origin.test");
        List<ByteBuf> parts = List.of(buf(hello, 0, 3), buf(hello, 3, 40), buf(hello, 40, hello.length));
        ch.writeInbound(parts.get(0));
        ch.writeInbound(parts.get(1));
        assertThat((Object) ch.readInbound()).as("held until the ClientHello is complete").isNull();
        ch.writeInbound(parts.get(2));
        for (ByteBuf part : parts) {
            assertThat((Object) ch.readInbound()).as("the very buffers, in order").isSameAs(part);
            assertThat(part.refCnt()).isEqualTo(1);
            part.release();
        }
        assertThat(ch.pipeline().get(TunnelStartGate.class)).isNull();
        assertThat(upstream.isOpen()).isTrue();
        AuditRecord r = record();
        assertThat(r.tlsSni()).isEqualTo("origin.test");
        assertThat(r.decision()).isEqualTo("allow");
        assertThat(r.error()).isNull();
        ch.finishAndReleaseAll();
    }

    @Test
    void anSniOfAnotherHostAllowedOnThePortIsLetThroughUnderItsOwnRule() throws Exception {
        EmbeddedChannel ch = gate("origin.test:443");
        ch.writeInbound(Unpooled.wrappedBuffer(ClientHelloParserTest.clientHello("cdn.test")));
        ByteBuf passed = ch.readInbound();
        assertThat(passed).isNotNull();
        passed.release();
        AuditRecord r = record();
        assertThat(r.decision()).isEqualTo("allow");
        assertThat(r.tlsSni()).isEqualTo("cdn.test");
        assertThat(r.rule()).as("the rule that allows the SNI").isEqualTo(Decider.decideTunnel(policy, extension,
                TargetParser.parseAuthority("cdn.test:443")).ruleId());
        ch.finishAndReleaseAll();
    }

    @Test
    void anSniOfAHostTheRulesDoNotAllowIsRefusedSniMismatch() throws Exception {
        EmbeddedChannel ch = gate("origin.test:443");
        byte[] hello = ClientHelloParserTest.clientHello("evil.test");
        ch.writeInbound(buf(hello, 0, 100));
        ch.writeInbound(buf(hello, 100, hello.length));
        assertRefused(ch);
        AuditRecord r = record();
        assertThat(r.decision()).isEqualTo("deny");
        assertThat(r.reason()).isEqualTo("sni_mismatch");
        assertThat(r.tlsSni()).isEqualTo("evil.test");
        assertThat(r.error()).isEqualTo("SNI names neither the CONNECT host nor a host allowed on its port");
    }

    @Test
    void aClientHelloWithoutSniForANamedHostIsRefusedNoSni() throws Exception {
        EmbeddedChannel ch = gate("origin.test:443");
        ch.writeInbound(buf(ClientHelloParserTest.clientHello(null), 0, ClientHelloParserTest.clientHello(null).length));
        assertRefused(ch);
        AuditRecord r = record();
        assertThat(r.reason()).isEqualTo("no_sni");
        assertThat(r.tlsSni()).isNull();
        assertThat(r.error()).isEqualTo("no SNI in the ClientHello for a named CONNECT host");
    }

    @Test
    void bytesThatAreNotTlsAreRefusedOn443AndPassOnAPortWithoutTlsOnly() throws Exception {
        byte[] ssh = "SSH-2.0-OpenSSH_9.6\r\n".getBytes(StandardCharsets.US_ASCII);
        EmbeddedChannel strict = gate("origin.test:443");
        strict.writeInbound(buf(ssh, 0, ssh.length));
        assertRefused(strict);
        AuditRecord r = record();
        assertThat(r.reason()).isEqualTo("not_http_or_tls");
        assertThat(r.error()).isEqualTo("first bytes are not a TLS ClientHello");

        records.clear();
        audit = new AuditEvent(records::add, Clock.systemUTC()).extension("default");
        upstream = new EmbeddedChannel();
        EmbeddedChannel lax = gate("counted.test:8022");
        ByteBuf first = Unpooled.wrappedBuffer(ssh);
        lax.writeInbound(first);
        assertThat((Object) lax.readInbound()).isSameAs(first);
        first.release();
        AuditRecord passed = record();
        assertThat(passed.decision()).isEqualTo("allow");
        assertThat(passed.error()).isNull();
        lax.finishAndReleaseAll();
    }

    @Test
    void aClientHelloLargerThanTheCapIsRefusedHeaderTooLarge() throws Exception {
        Target target = TargetParser.parseAuthority("origin.test:443");
        Decision tunnel = Decider.decideTunnel(policy, extension, target);
        byte[] hello = ClientHelloParserTest.clientHello("origin.test");
        EmbeddedChannel ch = new EmbeddedChannel(new TunnelStartGate(policy, extension, target, tunnel, audit,
                upstream, 64));
        ch.writeInbound(buf(hello, 0, hello.length));
        assertRefused(ch);
        AuditRecord r = record();
        assertThat(r.reason()).isEqualTo("header_too_large");
        assertThat(r.rule()).isEqualTo(TunnelStartGate.CLIENT_HELLO_RULE);
        assertThat(r.error()).isEqualTo("ClientHello over 64 bytes");
    }

    @Test
    void aClientThatEndsInTheMiddleOfItsClientHelloIsRefusedAndNothingGoesUpstream() throws Exception {
        EmbeddedChannel ch = gate("origin.test:443");
        byte[] hello = ClientHelloParserTest.clientHello("origin.test");
        ch.writeInbound(buf(hello, 0, hello.length / 2));
        ch.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertRefused(ch);
        AuditRecord r = record();
        assertThat(r.reason()).isEqualTo("not_http_or_tls");
        assertThat(r.error()).isEqualTo("client ended before its ClientHello was complete");
    }
}
