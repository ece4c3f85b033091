package dev.sluice.proxy.dial;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.proxy.ProxyConnectException;
import io.netty.handler.proxy.ProxyConnectionEvent;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link ParentHold} on an {@link EmbeddedChannel}, as it sits behind the parent proxy's handler: what
 * arrives after the parent's {@code 200} is kept, in order, until the owner asks to read; a close that
 * came meanwhile follows the kept bytes; the proxy handler's failure event is swallowed (the dialer
 * answers it once) while other errors pass; kept bytes are released if the hold is removed (the
 * channel ends) before they were read.
 */
class ParentHoldAnswersTest {

    /** What the owner's handlers, behind the hold, see. */
    private static final class Owner extends ChannelInboundHandlerAdapter {
        final List<String> seen = new ArrayList<>();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            seen.add(buf.toString(StandardCharsets.US_ASCII));
            buf.release();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            seen.add("<read-complete>");
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            seen.add("<inactive>");
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            seen.add("<error " + cause.getMessage() + ">");
        }
    }

    private static ByteBuf ascii(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    private static ProxyConnectionEvent connected() {
        return new ProxyConnectionEvent("http", "none", new InetSocketAddress("127.0.0.1", 3128),
                InetSocketAddress.createUnresolved("api.llm.test", 443));
    }

    @Test
    void bytesAfterTheParentsAnswerWaitForTheOwnersReadThenTheHoldStepsAside() {
        Owner owner = new Owner();
        EmbeddedChannel channel = new EmbeddedChannel(new ParentHold(), owner);
        channel.config().setAutoRead(false);
        channel.pipeline().fireUserEventTriggered(connected());
        channel.writeInbound(ascii("server-hello-1"), ascii("server-hello-2"));
        assertThat(owner.seen).as("nothing before the owner reads").isEmpty();

        channel.read();

        assertThat(owner.seen).containsExactly("server-hello-1", "server-hello-2", "<read-complete>");
        assertThat(channel.pipeline().get(ParentHold.class)).as("the hold leaves the pipeline").isNull();
        channel.writeInbound(ascii("later"));
        assertThat(owner.seen).as("after the hold, reads pass straight on").endsWith("later", "<read-complete>");
        assertThat(channel.finish()).isFalse();
    }

    @Test
    void aCloseWhileHeldComesAfterTheHeldBytes() {
        Owner owner = new Owner();
        EmbeddedChannel channel = new EmbeddedChannel(new ParentHold(), owner);
        channel.config().setAutoRead(false);
        channel.pipeline().fireUserEventTriggered(connected());
        channel.writeInbound(ascii("banner"));
        channel.pipeline().fireChannelInactive();
        assertThat(owner.seen).isEmpty();

        channel.read();

        assertThat(owner.seen).containsExactly("banner", "<read-complete>", "<inactive>");
        channel.finishAndReleaseAll();
    }

    @Test
    void aReadDuringTheConnectExchangeIsPassedOnAndTheHoldStays() {
        Owner owner = new Owner();
        EmbeddedChannel channel = new EmbeddedChannel(new ParentHold(), owner);
        channel.config().setAutoRead(false);

        channel.read();

        assertThat(channel.pipeline().get(ParentHold.class)).as("still there to hold what follows the 200").isNotNull();
        channel.writeInbound(ascii("early"));
        assertThat(owner.seen).isEmpty();
        channel.finishAndReleaseAll();
    }

    @Test
    void theParentsFailureIsSwallowedOtherErrorsPass() {
        Owner owner = new Owner();
        EmbeddedChannel channel = new EmbeddedChannel(new ParentHold(), owner);
        channel.pipeline().fireExceptionCaught(new ProxyConnectException("parent answered 403"));
        channel.pipeline().fireExceptionCaught(new IllegalStateException("boom"));
        assertThat(owner.seen).containsExactly("<error boom>");
        channel.finishAndReleaseAll();
    }

    @Test
    void heldBytesAreReleasedWhenTheHoldIsRemovedFirst() {
        EmbeddedChannel channel = new EmbeddedChannel(new ParentHold(), new Owner());
        channel.config().setAutoRead(false);
        channel.pipeline().fireUserEventTriggered(connected());
        ByteBuf held = ascii("never read");
        channel.writeInbound(held);
        assertThat(held.refCnt()).isEqualTo(1);

        channel.pipeline().remove(ParentHold.class);

        assertThat(held.refCnt()).isZero();
        channel.finishAndReleaseAll();
    }
}
