package dev.sluice.proxy.dial;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.proxy.ProxyConnectException;
import io.netty.handler.proxy.ProxyConnectionEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;

/**
 * Sits right behind Netty's {@link io.netty.handler.proxy.HttpProxyHandler} on an upstream channel that
 * goes through a parent proxy, and keeps every inbound message that arrives after the parent's
 * {@code 200} (an early ServerHello, a server's banner, bytes that came in the same segment as the
 * {@code 200}) until the phase that owns the channel asks to read (an outbound {@code read()}, which
 * is what {@code setAutoRead(true)} and a TLS handshake issue): then it hands them on in order, with a
 * close that came meanwhile after them, and leaves the pipeline. Without it those bytes would reach the
 * pipeline's tail before the owner's handlers were there, and be lost.
 *
 * <p>It also swallows the {@link ProxyConnectException} the proxy handler fires on failure: the dialer
 * answers that failure through the proxy handler's connect future, once.
 */
final class ParentHold extends ChannelDuplexHandler {

    private final ArrayDeque<Object> held = new ArrayDeque<>();
    private boolean inactive;
    /** Set by the proxy handler's {@link ProxyConnectionEvent}: the parent answered 200. */
    private boolean connected;

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof ProxyConnectionEvent) {
            connected = true;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        held.add(msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        // Held: the owner sees a read-complete when the held messages are handed on.
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        inactive = true;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (!(cause instanceof ProxyConnectException)) {
            ctx.fireExceptionCaught(cause);
        }
    }

    @Override
    public void read(ChannelHandlerContext ctx) {
        if (!connected) {
            // A read asked for during the CONNECT exchange (a TLS handshake already under way behind
            // us): the proxy handler needs it; stay, to hold what follows the 200.
            ctx.read();
            return;
        }
        boolean any = !held.isEmpty();
        Object msg;
        while ((msg = held.poll()) != null) {
            ctx.fireChannelRead(msg);
        }
        if (any) {
            ctx.fireChannelReadComplete();
        }
        if (inactive) {
            ctx.fireChannelInactive();
        } else {
            ctx.read();
        }
        if (!ctx.isRemoved()) {
            ctx.pipeline().remove(this);
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        release();
    }

    private void release() {
        Object msg;
        while ((msg = held.poll()) != null) {
            ReferenceCountUtil.release(msg);
        }
    }
}
