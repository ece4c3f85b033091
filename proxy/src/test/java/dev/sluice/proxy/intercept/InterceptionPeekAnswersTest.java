package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * {@link Interception.Peek}, the first step of a tunnel to an inspected host, on an
 * {@link EmbeddedChannel}: a first byte that opens a TLS handshake record (RFC 8446 section 5.1, type
 * 22) goes on untouched and the peek steps aside; anything else — plain HTTP sent into the tunnel, a
 * stray byte — closes the tunnel, is released, and the tunnel's record says {@code not_http_or_tls}.
 */
class InterceptionPeekAnswersTest {

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();

    @Test
    void aTlsHandshakeRecordGoesOnAndThePeekStepsAside() {
        AuditEvent tunnel = new AuditEvent(records::add, Clock.systemUTC()).extension("agent");
        EmbeddedChannel channel = new EmbeddedChannel(new Interception.Peek(tunnel));
        ByteBuf hello = Unpooled.wrappedBuffer(new byte[] {22, 3, 1, 0, 5, 1, 0, 0, 1, 0});
        channel.writeInbound(hello);
        ByteBuf passed = channel.readInbound();
        assertThat(passed).isSameAs(hello);
        assertThat(passed.readableBytes()).isEqualTo(10);
        passed.release();
        assertThat(channel.pipeline().get(Interception.Peek.class)).isNull();
        assertThat(channel.isOpen()).isTrue();
        tunnel.emit();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.decision()).isNull());
        channel.finishAndReleaseAll();
    }

    @Test
    void plainHttpIntoTheTunnelClosesItWithItsReason() {
        AuditEvent tunnel = new AuditEvent(records::add, Clock.systemUTC()).extension("agent");
        EmbeddedChannel channel = new EmbeddedChannel(new Interception.Peek(tunnel));
        ByteBuf request = Unpooled.copiedBuffer("GET / HTTP/1.1\r\nHost: api.llm.test\r\n\r\n", StandardCharsets.US_ASCII);
        channel.writeInbound(request);
        assertThat((Object) channel.readInbound()).as("nothing reaches the handshake").isNull();
        assertThat(request.refCnt()).isZero();
        assertThat(channel.isOpen()).isFalse();
        tunnel.emit();
        assertThat(records).singleElement().satisfies(r -> {
            assertThat(r.decision()).isEqualTo("deny");
            assertThat(r.reason()).isEqualTo("not_http_or_tls");
            assertThat(r.rule()).isEqualTo("inspect");
            assertThat(r.error()).isEqualTo("not TLS in a tunnel to an inspected host");
        });
        channel.finishAndReleaseAll();
    }
}
