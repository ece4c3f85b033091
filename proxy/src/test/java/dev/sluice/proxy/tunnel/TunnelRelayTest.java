package dev.sluice.proxy.tunnel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link TunnelRelay}'s own answers, on two EmbeddedChannels joined as a tunnel: bytes pass as the same
 * buffers, backpressure pauses the reading side until the other drains, a FIN or an idle timeout ends
 * the tunnel, and the one record is written once both sides closed.
 */
class TunnelRelayTest {

    private final List<AuditRecord> records = new ArrayList<>();
    private EmbeddedChannel downstream;
    private EmbeddedChannel upstream;

    @BeforeEach
    void join() {
        downstream = new EmbeddedChannel();
        upstream = new EmbeddedChannel();
        TunnelSession session = new TunnelSession(new AuditEvent(records::add, Clock.systemUTC()));
        downstream.pipeline().addLast(new TunnelRelay(session, upstream, true));
        upstream.pipeline().addLast(new TunnelRelay(session, downstream, false));
    }

    @AfterEach
    void close() {
        downstream.finishAndReleaseAll();
        upstream.finishAndReleaseAll();
    }

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    @Test
    void aBufferReadOnOneSideIsWrittenAsIsToTheOtherAndFlushedAtReadComplete() {
        ByteBuf sent = bytes("GET / HTTP/1.1\r\n\r\n");
        downstream.writeInbound(sent);
        ByteBuf arrived = upstream.readOutbound();
        assertThat(arrived).isSameAs(sent);
        assertThat(arrived.toString(StandardCharsets.US_ASCII)).isEqualTo("GET / HTTP/1.1\r\n\r\n");
        arrived.release();

        ByteBuf answer = bytes("HTTP/1.1 200 OK\r\n\r\n");
        upstream.writeInbound(answer);
        ByteBuf back = downstream.readOutbound();
        assertThat(back).isSameAs(answer);
        back.release();
    }

    @Test
    void aPeerThatStopsBeingWritablePausesReadingUntilItDrains() {
        upstream.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(8, 16));
        // Read without readComplete: the write to the upstream stays unflushed and fills its buffer.
        downstream.pipeline().fireChannelRead(bytes("0123456789abcdefXYZ"));
        assertThat(upstream.isWritable()).isFalse();
        assertThat(downstream.config().isAutoRead()).isFalse();

        upstream.flush(); // the upstream drains
        assertThat(upstream.isWritable()).isTrue();
        assertThat(downstream.config().isAutoRead()).isTrue();
        ByteBuf out = upstream.readOutbound();
        assertThat(out.readableBytes()).isEqualTo(19);
        out.release();
    }

    @Test
    void aFinOnBothSidesClosesBothAndWritesOneRecord() {
        downstream.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        // An EmbeddedChannel cannot half-close: the FIN closes the tunnel at once, after flushing.
        downstream.runPendingTasks();
        upstream.runPendingTasks();
        assertThat(upstream.isOpen()).isFalse();
        assertThat(downstream.isOpen()).isFalse();
        assertThat(records).hasSize(1);
        assertThat(records.get(0).error()).isNull();
    }

    @Test
    void anIdleTimeoutClosesTheTunnelAndTheRecordSaysSo() {
        upstream.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        downstream.runPendingTasks();
        upstream.runPendingTasks();
        assertThat(upstream.isOpen()).isFalse();
        assertThat(downstream.isOpen()).isFalse();
        assertThat(records).singleElement().extracting(AuditRecord::error).isEqualTo("idle_timeout");
    }

    @Test
    void whenOneSideClosesTheOtherIsClosedAfterItsQueuedBytesAndOneRecordIsWritten() {
        downstream.pipeline().fireChannelRead(bytes("queued"));
        upstream.close();
        downstream.runPendingTasks();
        assertThat(downstream.isOpen()).isFalse();
        assertThat(records).hasSize(1);
    }

    @Test
    void anExceptionEndsTheTunnelWithItsErrorRecorded() {
        downstream.pipeline().fireExceptionCaught(new java.io.IOException("Connection reset by peer"));
        downstream.runPendingTasks();
        upstream.runPendingTasks();
        assertThat(downstream.isOpen()).isFalse();
        assertThat(upstream.isOpen()).isFalse();
        assertThat(records).singleElement().extracting(AuditRecord::error).isEqualTo("connection reset");
    }
}
