package dev.sluice.proxy.forward;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.Reads;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
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
    private final WebSocketInspection inspection;
    private boolean ended;

    private WebSocketRelay(AuditEvent audit, Channel downstream, Channel upstream, WebSocketInspection inspection) {
        this.audit = audit;
        this.downstream = downstream;
        this.upstream = upstream;
        this.inspection = inspection;
    }

    /**
     * Starts relaying between {@code downstream} and {@code upstream}: adds a relay handler last in
     * each pipeline (the caller removes the HTTP handlers afterwards, so bytes they still hold reach
     * it) and turns reading on. Call on the shared event loop.
     *
     * @param audit the upgraded connection's record ({@code websocket.mode} already set), emitted once here
     * @param inspection for {@code websocket: inspect}: the frame codecs go in first and frames pass
     *                   through it; null to relay bytes unparsed
     */
    static void start(AuditEvent audit, Channel downstream, Channel upstream, WebSocketInspection inspection) {
        WebSocketRelay relay = new WebSocketRelay(audit, downstream, upstream, inspection);
        if (inspection != null) {
            inspection.installCodecs(downstream, upstream);
        }
        downstream.pipeline().addLast(NAME, relay.new Side(upstream, true));
        upstream.pipeline().addLast(NAME, relay.new Side(downstream, false));
        downstream.closeFuture().addListener(f -> relay.end(null));
        upstream.closeFuture().addListener(f -> relay.end(null));
    }

    /** Turns reading on for both sides (after the HTTP handlers are gone). */
    static void read(Channel downstream, Channel upstream) {
        Reads.setAutoRead(downstream, upstream.isWritable());
        Reads.setAutoRead(upstream, downstream.isWritable());
    }

    /** Ends an inspected connection: a close frame with {@code status} to both sides, then {@link #end}. */
    private void fail(WebSocketCloseStatus status, String error) {
        if (ended) {
            return;
        }
        for (Channel ch : new Channel[] {downstream, upstream}) {
            if (ch.isActive()) {
                ch.write(new CloseWebSocketFrame(status));
            }
        }
        end(error);
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
        // The upstream leg is flushed before the downstream one closes: closing an intercepted tunnel's
        // downstream closes its upstream too, which would drop what is still queued there.
        ChannelFuture up = upstream.isActive() ? upstream.writeAndFlush(Unpooled.EMPTY_BUFFER) : null;
        if (up != null) {
            up.addListener(ChannelFutureListener.CLOSE);
        }
        if (downstream.isActive()) {
            downstream.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> {
                if (up == null) {
                    downstream.close();
                } else {
                    up.addListener(g -> downstream.close());
                }
            });
        }
        audit.emit();
    }

    /** One direction: what this channel reads goes to {@code peer}. */
    private final class Side extends ChannelInboundHandlerAdapter {

        private final Channel peer;
        private final boolean fromClient;

        Side(Channel peer, boolean fromClient) {
            this.peer = peer;
            this.fromClient = fromClient;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            boolean relayed = inspection == null ? msg instanceof ByteBuf : msg instanceof WebSocketFrame;
            if (!relayed || ended || !peer.isActive()) {
                // The HTTP decoder's empty last content of the 101, or bytes after the end.
                ReferenceCountUtil.release(msg);
                return;
            }
            Object out = msg;
            if (inspection != null) {
                WebSocketInspection.Outcome outcome = fromClient ? inspection.fromClient((WebSocketFrame) msg)
                        : inspection.fromOrigin((WebSocketFrame) msg);
                if (outcome.close() != null) {
                    fail(outcome.close(), outcome.error());
                    return;
                }
                if (outcome.send() == null) {
                    return;
                }
                out = outcome.send();
            }
            peer.write(out).addListener((ChannelFutureListener) f -> {
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
            if (inspection != null && cause instanceof io.netty.handler.codec.compression.DecompressionException) {
                // permessage-deflate inflated past limits.max_websocket_message (or a broken stream).
                fail(WebSocketCloseStatus.MESSAGE_TOO_BIG,
                        "websocket message over limits.max_websocket_message once inflated: " + cause.getMessage());
                return;
            }
            if (cause instanceof CorruptedWebSocketFrameException corrupt) {
                // A frame over the limit (1009) or a protocol error (1002): both legs get that close code.
                WebSocketCloseStatus status = corrupt.closeStatus();
                fail(status, status.code() == WebSocketCloseStatus.MESSAGE_TOO_BIG.code()
                        ? "websocket message over limits.max_websocket_message"
                        : "websocket protocol error: " + corrupt.getMessage());
                return;
            }
            end(cause instanceof IOException ? "connection reset" : cause.getClass().getSimpleName());
        }
    }
}
