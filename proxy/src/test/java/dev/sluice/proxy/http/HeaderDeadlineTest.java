package dev.sluice.proxy.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link HeaderDeadline} on an EmbeddedChannel with frozen time: the event fires when a head is not
 * complete within the timeout — counted from the connection's start, then from the first byte of each
 * next request — and never while the connection waits idle between requests or after the head arrived.
 */
class HeaderDeadlineTest {

    private final List<Object> events = new ArrayList<>();
    private EmbeddedChannel channel;
    private HeaderDeadline deadline;

    @BeforeEach
    void start() {
        channel = new EmbeddedChannel();
        channel.freezeTime();
        deadline = new HeaderDeadline(1_000);
        channel.pipeline().addLast(deadline, new ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                events.add(evt);
            }
        });
    }

    @AfterEach
    void stop() {
        channel.finishAndReleaseAll();
    }

    private void advanceMillis(long millis) {
        channel.advanceTimeBy(millis, TimeUnit.MILLISECONDS);
        channel.runScheduledPendingTasks();
    }

    private void bytes(String s) {
        channel.writeInbound(Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII));
    }

    @Test
    void aConnectionThatSendsNoCompleteHeadInTimeGetsTheEvent() {
        advanceMillis(999);
        assertThat(events).isEmpty();
        advanceMillis(1);
        assertThat(events).containsExactly(HeaderDeadline.HeaderTimeoutEvent.INSTANCE);
    }

    @Test
    void aHeadThatArrivesInTimeCancelsTheDeadline() {
        bytes("GET http://a.test/ HTTP/1.1\r\n");
        advanceMillis(500);
        assertThat(deadline.headStarted()).isTrue();
        deadline.headReceived();
        assertThat(deadline.headStarted()).isFalse();
        advanceMillis(5_000);
        assertThat(events).isEmpty();
    }

    @Test
    void betweenRequestsTheClockStartsAtTheNextRequestsFirstByte() {
        deadline.headReceived();
        deadline.awaitNextHead();
        advanceMillis(10_000); // idle between requests: idle_timeout's business, not this one's
        assertThat(events).isEmpty();
        bytes("GET http://a.test/next HTTP/1.1\r\n");
        advanceMillis(999);
        assertThat(events).isEmpty();
        advanceMillis(1);
        assertThat(events).containsExactly(HeaderDeadline.HeaderTimeoutEvent.INSTANCE);
    }

    @Test
    void aClosedConnectionGetsNoEvent() {
        channel.close();
        advanceMillis(2_000);
        assertThat(events).isEmpty();
    }

    @Test
    void aTimeoutOfZeroIsRefused() {
        assertThatThrownBy(() -> new HeaderDeadline(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeoutMillis: 0 (expected: > 0)");
    }
}
