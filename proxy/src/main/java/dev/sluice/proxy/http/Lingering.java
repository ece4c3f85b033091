package dev.sluice.proxy.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Lingering close: after refusing a request whose body is still arriving, keep reading (and dropping)
 * for a while before closing. Closing a socket with unread input makes the kernel send a reset, and the
 * client may lose the refusal it has not read yet; so the connection closes when the request ends, or
 * after a bound, whichever is first. The bound is the running proxy's ({@code ProxyContext.refusalLinger},
 * {@code ProxyContext.DEFAULT_REFUSAL_LINGER} unless the server was started with another), passed by the caller.
 */
public final class Lingering {

    private Lingering() {
    }

    /**
     * Schedules the fallback close of {@code ctx}'s channel after {@code bound}, unless it is closed by then.
     *
     * @param ctx the downstream channel's context
     * @param bound the longest time the refused request's body is read and dropped; positive
     */
    public static void closeLater(ChannelHandlerContext ctx, Duration bound) {
        ctx.executor().schedule(() -> {
            if (ctx.channel().isActive()) {
                close(ctx);
            }
        }, bound.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** Closes {@code ctx}'s channel once everything written so far has been flushed. */
    public static void close(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }
}
