package dev.sluice.proxy.http;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Enforces {@code limits.header_timeout}: a request head must be complete within the timeout, counted
 * from the connection's start and, on a kept-alive connection, from the first byte of each next
 * request. When it is not, a {@link HeaderTimeoutEvent} is fired down the pipeline (the request phase
 * audits it with reason {@code header_timeout} and closes). Sits first in the pipeline, so it sees the
 * bytes before the decoder.
 */
public final class HeaderDeadline extends ChannelInboundHandlerAdapter {

    /** Fired when a request head did not arrive in time. */
    public static final class HeaderTimeoutEvent {
        static final HeaderTimeoutEvent INSTANCE = new HeaderTimeoutEvent();

        private HeaderTimeoutEvent() {
        }
    }

    private final long timeoutMillis;
    private ChannelHandlerContext ctx;
    private ScheduledFuture<?> timer;
    private boolean waitingForHead = true;
    private boolean headStarted;

    /** @param timeoutMillis the header timeout in milliseconds (&gt; 0) */
    public HeaderDeadline(long timeoutMillis) {
        if (timeoutMillis <= 0) {
            throw new IllegalArgumentException("timeoutMillis: " + timeoutMillis + " (expected: > 0)");
        }
        this.timeoutMillis = timeoutMillis;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        if (ctx.channel().isActive()) {
            arm();
        }
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        arm();
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (waitingForHead && msg instanceof ByteBuf buf && buf.isReadable()) {
            headStarted = true;
            if (timer == null) {
                arm();
            }
        }
        ctx.fireChannelRead(msg);
    }

    private void arm() {
        if (timer == null) {
            timer = ctx.executor().schedule(() -> {
                timer = null;
                if (waitingForHead && ctx.channel().isActive()) {
                    ctx.fireUserEventTriggered(HeaderTimeoutEvent.INSTANCE);
                }
            }, timeoutMillis, TimeUnit.MILLISECONDS);
        }
    }

    /** Called by the request phase when a complete request head arrived. */
    public void headReceived() {
        waitingForHead = false;
        headStarted = false;
        cancel();
    }

    /** Called by the request phase when the connection waits for its next request. */
    public void awaitNextHead() {
        waitingForHead = true;
        headStarted = false;
    }

    /** Answers whether bytes of a request head have arrived and the head is not complete yet. */
    public boolean headStarted() {
        return waitingForHead && headStarted;
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancel();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        cancel();
    }
}
