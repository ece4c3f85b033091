package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.policy.RedactionSettings;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameEncoder;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.timeout.IdleStateEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link WebSocketRelay} between two {@link EmbeddedChannel}s (the client's and the origin's) after a
 * {@code 101}: bytes relayed as they are, both ways, with backpressure; the one record written when
 * either side ends (FIN, idle timeout, an error) and both sides closed; and with
 * {@code websocket: inspect} ({@link WebSocketInspection}, real RFC 6455 frames, policy redaction
 * settings parsed by the policy loader) a fragmented text message redacted and sent on whole, a
 * placeholder in a message closing both legs with 1008 and an over-long message with 1009.
 */
class WebSocketRelayAnswersTest {

    private final List<AuditRecord> records = new ArrayList<>();
    private final AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).websocketMode("relay");
    private final EmbeddedChannel down = new EmbeddedChannel();
    private final EmbeddedChannel up = new EmbeddedChannel();
    private final List<ByteBuf> given = new ArrayList<>();

    private ByteBuf bytes(String text) {
        ByteBuf buf = Unpooled.copiedBuffer(text, StandardCharsets.ISO_8859_1);
        given.add(buf);
        return buf;
    }

    /** The bytes {@code ch} wrote, released (empty flush markers skipped). */
    private static String written(EmbeddedChannel ch) {
        StringBuilder b = new StringBuilder();
        for (Object m; (m = ch.readOutbound()) != null; ) {
            ByteBuf buf = (ByteBuf) m;
            b.append(buf.toString(StandardCharsets.ISO_8859_1));
            buf.release();
        }
        return b.toString();
    }

    private AuditRecord onlyRecord() {
        assertThat(records).hasSize(1);
        return records.get(0);
    }

    private void assertAllGivenReleased() {
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("refCnt of a buffer given to the relay").isZero());
    }

    @Test
    void bytesGoAsTheyAreBothWaysAndANonBufferIsDropped() {
        WebSocketRelay.start(audit, down, up, null);
        WebSocketRelay.read(down, up);
        down.writeInbound(LastHttpContent.EMPTY_LAST_CONTENT);
        down.writeInbound(bytes("\u0081\u0085masked-client-frame"));
        up.writeInbound(bytes("\u0081\u0002hi"));
        assertThat(written(up)).isEqualTo("\u0081\u0085masked-client-frame");
        assertThat(written(down)).isEqualTo("\u0081\u0002hi");
        assertThat(records).as("the record is written when the connection ends").isEmpty();
        assertThat(down.isOpen() && up.isOpen()).isTrue();
        assertAllGivenReleased();
        down.finishAndReleaseAll();
        up.finishAndReleaseAll();
    }

    @Test
    void aSideThatCannotWriteStopsItsPeerReadingUntilItDrains() {
        up.config().setWriteBufferWaterMark(new WriteBufferWaterMark(8, 16));
        WebSocketRelay.start(audit, down, up, null);
        WebSocketRelay.read(down, up);
        assertThat(down.config().isAutoRead()).isTrue();
        down.pipeline().fireChannelRead(bytes("a frame larger than the high water mark"));
        assertThat(up.isWritable()).isFalse();
        assertThat(down.config().isAutoRead()).as("the client is not read while the origin leg is full").isFalse();
        up.flush();
        up.runPendingTasks();
        down.runPendingTasks();
        assertThat(up.isWritable()).isTrue();
        assertThat(down.config().isAutoRead()).as("read again once it drained").isTrue();
        assertThat(written(up)).isEqualTo("a frame larger than the high water mark");
        assertAllGivenReleased();
        down.finishAndReleaseAll();
        up.finishAndReleaseAll();
    }

    @Test
    void aFinFlushesWhatWasReadWritesOneRecordAndClosesBothSides() {
        WebSocketRelay.start(audit, down, up, null);
        WebSocketRelay.read(down, up);
        up.pipeline().fireChannelRead(bytes("last words"));
        up.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        down.runPendingTasks();
        up.runPendingTasks();
        assertThat(written(down)).as("flushed before the close").isEqualTo("last words");
        assertThat(down.isOpen()).isFalse();
        assertThat(up.isOpen()).isFalse();
        AuditRecord r = onlyRecord();
        assertThat(r.websocketMode()).isEqualTo("relay");
        assertThat(r.error()).isNull();
        down.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        assertThat(records).as("once").hasSize(1);
        assertAllGivenReleased();
    }

    @Test
    void anIdleTimeoutEndsTheConnectionWithItsError() {
        WebSocketRelay.start(audit, down, up, null);
        down.pipeline().fireUserEventTriggered(IdleStateEvent.ALL_IDLE_STATE_EVENT);
        up.runPendingTasks();
        assertThat(down.isOpen() || up.isOpen()).isFalse();
        assertThat(onlyRecord().error()).isEqualTo("idle_timeout");
    }

    @Test
    void aResetOnEitherSideIsRecordedAsSuch() {
        WebSocketRelay.start(audit, down, up, null);
        up.pipeline().fireExceptionCaught(new IOException("Connection reset by peer"));
        down.runPendingTasks();
        assertThat(down.isOpen() || up.isOpen()).isFalse();
        assertThat(onlyRecord().error()).isEqualTo("connection reset");
    }

    // websocket: inspect

    private static final int MAX_MESSAGE = 1024;

    private WebSocketInspection inspection(String redaction) throws Exception {
        RedactionSettings settings = PolicyLoader.parse("version: 1\n" + redaction, "ws.yaml").redaction();
        return new WebSocketInspection(audit, settings, MAX_MESSAGE, null, null);
    }

    /** {@code frames} as a client sends them: masked. */
    private static ByteBuf clientBytes(WebSocketFrame... frames) {
        EmbeddedChannel encoder = new EmbeddedChannel(new WebSocket13FrameEncoder(true));
        encoder.writeOutbound((Object[]) frames);
        ByteBuf all = Unpooled.buffer();
        for (Object m; (m = encoder.readOutbound()) != null; ) {
            all.writeBytes((ByteBuf) m);
            ((ByteBuf) m).release();
        }
        encoder.finish();
        return all;
    }

    /** The frames {@code ch} wrote ({@code masked}: toward the origin), decoded. */
    private static List<WebSocketFrame> frames(EmbeddedChannel ch, boolean masked) {
        EmbeddedChannel decoder = new EmbeddedChannel(new WebSocket13FrameDecoder(WebSocketDecoderConfig.newBuilder()
                .expectMaskedFrames(masked).allowMaskMismatch(false).maxFramePayloadLength(1 << 20).build()));
        for (Object m; (m = ch.readOutbound()) != null; ) {
            decoder.writeInbound(m);
        }
        List<WebSocketFrame> out = new ArrayList<>();
        for (Object m; (m = decoder.readInbound()) != null; ) {
            out.add((WebSocketFrame) m);
        }
        decoder.finish();
        return out;
    }

    private static String anthropicKey() {
        Random random = new Random(5);
        StringBuilder b = new StringBuilder("sk-ant-").append("api03-");
        String urlsafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        for (int i = 0; i < 93; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.append("AA").toString();
    }

    @Test
    void aFragmentedTextMessageGoesOnWholeAndRedactedAndIsCounted() throws Exception {
        WebSocketRelay.start(audit, down, up, inspection(""));
        WebSocketRelay.read(down, up);
        String key = anthropicKey();
        String message = "{\"text\":\"my key is " + key + "\"}";
        down.writeInbound(clientBytes(new TextWebSocketFrame(false, 0, message.substring(0, 20)),
                new ContinuationWebSocketFrame(true, 0, message.substring(20))));
        List<WebSocketFrame> sent = frames(up, true);
        assertThat(sent).hasSize(1);
        WebSocketFrame frame = sent.get(0);
        assertThat(frame).isInstanceOf(TextWebSocketFrame.class);
        assertThat(frame.isFinalFragment()).isTrue();
        String text = ((TextWebSocketFrame) frame).text();
        assertThat(text).startsWith("{\"text\":\"my key is ").doesNotContain(key.substring(14));
        frame.release();
        up.writeInbound(Unpooled.copiedBuffer(new byte[] {(byte) 0x81, 2, 'o', 'k'}));
        List<WebSocketFrame> received = frames(down, false);
        assertThat(received).singleElement().satisfies(f -> assertThat(((TextWebSocketFrame) f).text()).isEqualTo("ok"));
        received.forEach(WebSocketFrame::release);
        down.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
        up.runPendingTasks();
        AuditRecord r = onlyRecord();
        assertThat(r.websocketMessagesSent()).isEqualTo(1L);
        assertThat(r.websocketMessagesReceived()).isEqualTo(1L);
        assertThat(r.redactions()).containsEntry("anthropic-api-key", 1L);
        down.finishAndReleaseAll();
        up.finishAndReleaseAll();
    }

    @Test
    void aPlaceholderInAMessageClosesBothLegsWith1008AndNeverReachesTheOrigin() throws Exception {
        WebSocketRelay.start(audit, down, up, inspection(""));
        WebSocketRelay.read(down, up);
        String placeholder = "sluice-cred-llm-" + "0123456789abcdef".repeat(2);
        down.writeInbound(clientBytes(new TextWebSocketFrame("use " + placeholder)));
        up.runPendingTasks();
        List<WebSocketFrame> toOrigin = frames(up, true);
        List<WebSocketFrame> toClient = frames(down, false);
        for (List<WebSocketFrame> leg : List.of(toOrigin, toClient)) {
            assertThat(leg).singleElement().isInstanceOf(CloseWebSocketFrame.class);
            assertThat(((CloseWebSocketFrame) leg.get(0)).statusCode()).isEqualTo(1008);
            leg.forEach(WebSocketFrame::release);
        }
        assertThat(down.isOpen() || up.isOpen()).isFalse();
        assertThat(onlyRecord().error()).isEqualTo("credential_host_mismatch: a credential placeholder in a websocket message");
    }

    @Test
    void aMessageOverTheLimitClosesBothLegsWith1009() throws Exception {
        WebSocketRelay.start(audit, down, up, inspection(""));
        WebSocketRelay.read(down, up);
        down.writeInbound(clientBytes(new TextWebSocketFrame(false, 0, "x".repeat(MAX_MESSAGE - 10)),
                new ContinuationWebSocketFrame(true, 0, "y".repeat(20))));
        up.runPendingTasks();
        List<WebSocketFrame> toOrigin = frames(up, true);
        assertThat(toOrigin).singleElement().isInstanceOf(CloseWebSocketFrame.class);
        assertThat(((CloseWebSocketFrame) toOrigin.get(0)).statusCode()).isEqualTo(1009);
        toOrigin.forEach(WebSocketFrame::release);
        frames(down, false).forEach(WebSocketFrame::release);
        assertThat(onlyRecord().error()).isEqualTo("websocket message over limits.max_websocket_message (1024 bytes)");
    }
}
