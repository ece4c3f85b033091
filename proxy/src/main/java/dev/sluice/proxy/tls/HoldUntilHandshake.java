package dev.sluice.proxy.tls;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.PendingWriteQueue;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import java.nio.channels.ClosedChannelException;

/**
 * Sits right behind an upstream {@link io.netty.handler.ssl.SslHandler} and holds every write until
 * that handler reports a successful handshake, then writes them in order and steps aside. The request
 * a forwarder writes at once thus reaches the TLS engine only after the whole trust decision —
 * PKIX, hostname, pins, and for a resumed session the check {@link ResumableTrust} runs after the
 * engine finished — has passed. Without it, BoringSSL may encrypt the held request in the same step
 * that completes a resumed handshake, before Netty asks the trust manager about the resumption.
 *
 * <p>A failed handshake, a closed channel or the removal of this handler fails the held writes with
 * the cause (their buffers are released).
 */
final class HoldUntilHandshake extends ChannelDuplexHandler {

    private PendingWriteQueue held;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        held = new PendingWriteQueue(ctx);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (held == null) {
            ctx.write(msg, promise);
        } else {
            held.add(msg, promise);
        }
    }

    @Override
    public void flush(ChannelHandlerContext ctx) {
        if (held == null) {
            ctx.flush();
        }
        // Otherwise nothing to flush yet: the handshake's own records are flushed by the SslHandler.
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof SslHandshakeCompletionEvent handshake && held != null) {
            PendingWriteQueue writes = held;
            held = null;
            if (handshake.isSuccess()) {
                writes.removeAndWriteAll();
                ctx.flush();
                ctx.pipeline().remove(this);
                ctx.fireUserEventTriggered(evt);
            } else {
                // The handlers behind learn why first, then their writes fail.
                ctx.fireUserEventTriggered(evt);
                writes.removeAndFailAll(handshake.cause());
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        failHeld(new ClosedChannelException());
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        failHeld(new ClosedChannelException());
    }

    private void failHeld(Throwable cause) {
        if (held != null) {
            PendingWriteQueue writes = held;
            held = null;
            writes.removeAndFailAll(cause);
        }
    }
}
