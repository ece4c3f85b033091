package dev.sluice.proxy.http;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import java.util.concurrent.TimeUnit;

/**
 * Lingering close: after refusing a request whose body is still arriving, keep reading (and dropping)
 * for a while before closing. Closing a socket with unread input makes the kernel send a reset, and the
 * client may lose the refusal it has not read yet; so the connection closes when the request ends, or
 * after {@value #LINGER_MILLIS} ms, whichever is first.
 *
 * <p>The system property {@value #LINGER_PROPERTY} (milliseconds) overrides that bound for tests that
 * must tell a close caused by the request ending from one caused by the bound; it is read at each
 * refusal, and production leaves it unset.
 */
public final class Lingering {

    /** The longest time a refused request's body is read and dropped before the connection closes, in ms. */
    public static final long LINGER_MILLIS = 2_000;

    /** The system property that overrides {@link #LINGER_MILLIS} (in ms), for tests only. */
    public static final String LINGER_PROPERTY = "sluice.test.lingerMillis";

    private Lingering() {
    }

    /**
     * Schedules the fallback close of {@code ctx}'s channel after {@link #LINGER_MILLIS} (or
     * {@value #LINGER_PROPERTY} when set).
     */
    public static void closeLater(ChannelHandlerContext ctx) {
        ctx.executor().schedule(() -> {
            if (ctx.channel().isActive()) {
                close(ctx);
            }
        }, Long.getLong(LINGER_PROPERTY, LINGER_MILLIS), TimeUnit.MILLISECONDS);
    }

    /** Closes {@code ctx}'s channel once everything written so far has been flushed. */
    public static void close(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }
}
