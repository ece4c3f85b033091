package dev.sluice.proxy.request;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * What the request phase holds back while an exchange is in flight or a request is held for approval:
 * pipelined messages (decoded requests and contents, or raw bytes once a CONNECT's decoder is gone) and
 * the end of the client's input, in the order they arrived, so that answers keep the order of requests.
 * At most {@link #MAX_QUEUED_MESSAGES} messages wait; the phase closes the connection when a message does
 * not fit. The queue owns what it holds until it is polled (then the caller does) or released.
 * Not thread-safe: used on the connection's event loop.
 */
final class RequestQueue {

    /** Pipelined messages held while an exchange is in flight before the connection is closed. */
    static final int MAX_QUEUED_MESSAGES = 256;

    /**
     * Queued in place of the end of the client's input (FIN, or close_notify in an intercepted tunnel)
     * that arrives behind queued messages (or while a request is held for approval): it takes effect
     * after them, in order. The epoll transport reports a FIN, and reads the bytes before it, even while
     * reading is paused, so the end of input can overtake pipelined requests that wait for the exchange
     * in flight; NIO reads neither until reading resumes.
     */
    private static final Object INPUT_ENDED = new Object();

    private final ArrayDeque<Object> queued = new ArrayDeque<>();

    /**
     * Queues {@code msg}; returns false, and releases it, when {@link #MAX_QUEUED_MESSAGES} already wait
     * (the caller then closes the connection).
     */
    boolean offer(Object msg) {
        if (queued.size() >= MAX_QUEUED_MESSAGES) {
            ReferenceCountUtil.release(msg);
            return false;
        }
        queued.add(msg);
        return true;
    }

    /** Queues {@code msg} whatever the bound (a message already taken in before the exchange began). */
    void add(Object msg) {
        queued.add(msg);
    }

    /** Queues the end of the client's input behind what waits. */
    void addInputEnded() {
        queued.add(INPUT_ENDED);
    }

    /** Answers whether {@code msg} is the end of input this queue held ({@link #addInputEnded}). */
    static boolean isInputEnded(Object msg) {
        return msg == INPUT_ENDED;
    }

    boolean isEmpty() {
        return queued.isEmpty();
    }

    /** Returns the oldest message (now the caller's), or null when none waits. */
    @Nullable Object poll() {
        return queued.poll();
    }

    /**
     * Hands what waits to the tunnel phase behind {@code ctx}, in order, once the request phase left the
     * pipeline for a CONNECT: raw bytes are read on, the end of input becomes a
     * {@link ChannelInputShutdownEvent}, anything else (decoded HTTP) is released.
     */
    void handToTunnel(ChannelHandlerContext ctx) {
        while (!queued.isEmpty()) {
            Object msg = queued.poll();
            if (msg instanceof ByteBuf) {
                ctx.fireChannelRead(msg);
            } else if (msg == INPUT_ENDED) {
                ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            } else {
                ReferenceCountUtil.release(msg);
            }
        }
    }

    /** Releases everything that waits. */
    void releaseAll() {
        while (!queued.isEmpty()) {
            ReferenceCountUtil.release(queued.poll());
        }
    }
}
