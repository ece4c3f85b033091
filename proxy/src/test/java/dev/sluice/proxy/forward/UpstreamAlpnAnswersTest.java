package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.certs.PinResult;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.netty.util.concurrent.Promise;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

/**
 * {@link UpstreamAlpn} on an {@link EmbeddedChannel} (a stand-in for the TLS handler in front of it,
 * the handshake's outcome given as its {@link SslHandshakeCompletionEvent}): the promise it completes,
 * the handlers it leaves behind for HTTP/1.1, the bytes it held meanwhile, and how it fails. The
 * {@code h2} choice needs a real ALPN handshake: {@code H2UpstreamTest} (sockets); the h2 handlers it
 * installs are {@link H2UpstreamAnswersTest}'s.
 */
class UpstreamAlpnAnswersTest {

    private final Promise<UpstreamAlpn.Negotiated> done = ImmediateEventExecutor.INSTANCE.newPromise();
    private final List<Object> events = new ArrayList<>();

    private EmbeddedChannel channel() throws Exception {
        Policy policy = PolicyLoader.parse("version: 1\n", "alpn.yaml");
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.pipeline().addLast("tls", new ChannelInboundHandlerAdapter());
        ch.pipeline().addLast(UpstreamAlpn.NAME, new UpstreamAlpn("api.llm.test:443", policy, done));
        ch.pipeline().addLast("events", new ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                events.add(evt);
            }
        });
        return ch;
    }

    @Test
    void withoutAnAlpnAnswerTheConnectionIsSetUpForHttp11AndTheGateStepsAside() throws Exception {
        EmbeddedChannel ch = channel();
        ch.pipeline().fireUserEventTriggered(SslHandshakeCompletionEvent.SUCCESS);
        assertThat(done.isSuccess()).isTrue();
        UpstreamAlpn.Negotiated negotiated = done.getNow();
        assertThat(negotiated.protocol()).isEqualTo("http/1.1");
        assertThat(negotiated.pin()).isEqualTo(PinResult.NONE);
        assertThat(negotiated.h2()).isNull();
        assertThat(ch.pipeline().get(UpstreamAlpn.NAME)).isNull();
        assertThat(ch.pipeline().get("codec")).isInstanceOf(HttpClientCodec.class);
        assertThat(ch.pipeline().get("response")).isInstanceOf(UpstreamAlpn.Unclaimed.class);
        assertThat(events).as("the handshake event is the gate's").isEmpty();
        assertThat(ch.isOpen()).isTrue();
        assertThat(ch.finishAndReleaseAll()).isFalse();
    }

    @Test
    void bytesReadBeforeTheHandshakeEndedGoToTheNewHandlersAndAnUnaskedAnswerCloses() throws Exception {
        EmbeddedChannel ch = channel();
        ByteBuf early = Unpooled.copiedBuffer("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", StandardCharsets.US_ASCII);
        ch.writeInbound(early);
        assertThat(early.refCnt()).as("held").isEqualTo(1);
        assertThat((Object) ch.readInbound()).isNull();
        ch.pipeline().fireUserEventTriggered(SslHandshakeCompletionEvent.SUCCESS);
        assertThat(done.isSuccess()).isTrue();
        assertThat(early.refCnt()).as("decoded by the codec").isZero();
        assertThat(ch.isOpen()).as("an origin that answers before it is asked is closed on").isFalse();
        ch.finishAndReleaseAll();
    }

    @Test
    void aFailedHandshakeFailsThePromiseWithItsCause() throws Exception {
        EmbeddedChannel ch = channel();
        SSLHandshakeException cause = new SSLHandshakeException("pin mismatch");
        SslHandshakeCompletionEvent failed = new SslHandshakeCompletionEvent(cause);
        ch.pipeline().fireUserEventTriggered(failed);
        assertThat(done.isSuccess()).isFalse();
        assertThat(done.cause()).isSameAs(cause);
        assertThat(events).as("passed on to whoever closes").containsExactly(failed);
        ch.finishAndReleaseAll();
    }

    @Test
    void aCloseBeforeTheHandshakeEndedFailsThePromiseAndReleasesWhatWasHeld() throws Exception {
        EmbeddedChannel ch = channel();
        ByteBuf early = Unpooled.copiedBuffer("partial", StandardCharsets.US_ASCII);
        ch.writeInbound(early);
        ch.close();
        assertThat(done.cause()).isInstanceOf(ClosedChannelException.class);
        assertThat(early.refCnt()).isZero();
    }

    @Test
    void anErrorBeforeTheHandshakeEndedFailsThePromiseAndCloses() throws Exception {
        EmbeddedChannel ch = channel();
        java.io.IOException reset = new java.io.IOException("Connection reset by peer");
        ch.pipeline().fireExceptionCaught(reset);
        assertThat(done.cause()).isSameAs(reset);
        assertThat(ch.isOpen()).isFalse();
        ch.finishAndReleaseAll();
    }
}
