package dev.sluice.proxy.tls;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import java.nio.charset.StandardCharsets;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

/** {@link HoldUntilHandshake} on its own: what it lets through, when, and what it releases. */
class HoldUntilHandshakeTest {

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    @Test
    void writesWaitForASuccessfulHandshakeThenGoOutInOrderAndTheHandlerStepsAside() {
        EmbeddedChannel channel = new EmbeddedChannel(new HoldUntilHandshake());
        ChannelFuture first = channel.writeAndFlush(bytes("GET / HTTP/1.1\r\n"));
        ChannelFuture second = channel.writeAndFlush(bytes("\r\n"));
        assertThat((Object) channel.readOutbound()).isNull();
        assertThat(first.isDone()).isFalse();

        channel.pipeline().fireUserEventTriggered(SslHandshakeCompletionEvent.SUCCESS);
        ByteBuf out1 = channel.readOutbound();
        ByteBuf out2 = channel.readOutbound();
        assertThat(out1.toString(StandardCharsets.US_ASCII)).isEqualTo("GET / HTTP/1.1\r\n");
        assertThat(out2.toString(StandardCharsets.US_ASCII)).isEqualTo("\r\n");
        out1.release();
        out2.release();
        assertThat(first.isSuccess()).isTrue();
        assertThat(second.isSuccess()).isTrue();
        assertThat(channel.pipeline().get(HoldUntilHandshake.class)).isNull();
        assertThat(channel.finish()).isFalse();
    }

    @Test
    void aFailedHandshakeFailsTheHeldWritesAndReleasesTheirBuffers() {
        EmbeddedChannel channel = new EmbeddedChannel(new HoldUntilHandshake());
        ByteBuf request = bytes("GET / HTTP/1.1\r\n\r\n");
        ChannelFuture write = channel.writeAndFlush(request);
        SSLHandshakeException cause = new SSLHandshakeException("pin mismatch");
        channel.pipeline().fireUserEventTriggered(new SslHandshakeCompletionEvent(cause));
        assertThat(write.cause()).isSameAs(cause);
        assertThat(request.refCnt()).isZero();
        assertThat((Object) channel.readOutbound()).isNull();
        channel.finish();
    }

    @Test
    void aChannelClosedDuringTheHandshakeFailsTheHeldWrites() {
        EmbeddedChannel channel = new EmbeddedChannel(new HoldUntilHandshake());
        ByteBuf request = bytes("GET / HTTP/1.1\r\n\r\n");
        ChannelFuture write = channel.writeAndFlush(request);
        channel.close();
        assertThat(write.isSuccess()).isFalse();
        assertThat(request.refCnt()).isZero();
    }
}
