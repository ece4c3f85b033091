package dev.sluice.proxy.forward;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.Reads;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A WebSocket connection after the origin's {@code 101} (RFC 6455 section 4), relayed as bytes
 * ({@code websocket.mode} {@code plain} on the explicit listener, {@code relay} on an intercepted host):
 * every buffer read on one side is written, as is, to the other. Backpressure: a side stops reading
 * while its peer is not writable, and reads again when the peer drains (writability drives autoRead).
 * The upstream channel's byte counter keeps counting into the connection's one audit record, which is
 * written when either side closes or sends FIN (after what was read is flushed to the other side), with
 * its duration; an idle timeout ({@code limits.idle_timeout}) ends it with {@code error: idle_timeout}.
 */
final class WebSocketRelay {

    private static final Logger log = LoggerFactory.getLogger(WebSocketRelay.class);

    /** Pipeline name of the relay on both channels. */
    static final String NAME = "websocket";

    private final AuditEvent audit;
    private final Channel downstream;
    private final Channel upstream;
    private boolean ended;

    private WebSocketRelay(AuditEvent audit, Channel downstream, Channel upstream) {
        this.audit = audit;
        this.downstream = downstream;
        this.upstream = upstream;
    }

    /**
     * Starts relaying between {@code downstream} and {@code upstream}: adds a relay handler last in
     * each pipeline (the caller removes the HTTP handlers afterwards, so bytes they still hold reach
     * it) and turns reading on. Call on the shared event loop.
     *
     * @param audit the upgraded connection's record ({@code websocket.mode} already set), emitted once here
     */
    static void start(AuditEvent audit, Channel downstream, Channel upstream) {
        WebSocketRelay relay = new WebSocketRelay(audit, downstream, upstream);
        downstream.pipeline().addLast(NAME, relay.new Side(upstream));
        upstream.pipeline().addLast(NAME, relay.new Side(downstream));
        downstream.closeFuture().addListener(f -> relay.end(null));
        upstream.closeFuture().addListener(f -> relay.end(null));
    }

    /** Turns reading on for both sides (after the HTTP handlers are gone). */
    static void read(Channel downstream, Channel upstream) {
        Reads.setAutoRead(downstream, upstream.isWritable());
        Reads.setAutoRead(upstream, downstream.isWritable());
    }

    /** Writes the record (once) and closes both sides after what is queued is flushed. */
    private void end(String error) {
        if (ended) {
            return;
        }
        ended = true;
        if (error != null && audit.errorOrNull() == null) {
            audit.error(error);
        }
        for (Channel ch : new Channel[] {downstream, upstream}) {
            if (ch.isActive()) {
                ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            }
        }
        audit.emit();
    }

    /** One direction: what this channel reads goes to {@code peer}. */
    private final class Side extends ChannelInboundHandlerAdapter {

        private final Channel peer;

        Side(Channel peer) {
            this.peer = peer;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof ByteBuf buf) || ended || !peer.isActive()) {
                // The HTTP decoder's empty last content of the 101, or bytes after the end.
                ReferenceCountUtil.release(msg);
                return;
            }
            peer.write(buf).addListener((ChannelFutureListener) f -> {
                if (!f.isSuccess()) {
                    end("write failed: " + f.cause().getClass().getSimpleName());
                }
            });
            if (!peer.isWritable()) {
                Reads.setAutoRead(ctx.channel(), false);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            peer.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable() && !ended) {
                Reads.setAutoRead(peer, true);
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent) {
                end("idle_timeout");
                return;
            }
            if (evt instanceof ChannelInputShutdownEvent) {
                end(null);
                return;
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            end(null);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("websocket channel {} failed: {}", ctx.channel(), cause.toString());
            end(cause instanceof IOException ? "connection reset" : cause.getClass().getSimpleName());
        }
    }
}
