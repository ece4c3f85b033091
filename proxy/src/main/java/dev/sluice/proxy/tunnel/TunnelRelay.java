package dev.sluice.proxy.tunnel;

import dev.sluice.proxy.core.Reads;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One direction of a blind tunnel: every buffer read on this channel is written, as is (no copy), to
 * the peer channel. Backpressure: when the peer stops being writable this channel stops reading, and
 * reading resumes when the peer drains (writability drives autoRead). Half-close: a FIN on this side
 * becomes a shutdown of the peer's output once queued bytes are flushed; when both sides have sent
 * FIN, or either side closes, both close.
 */
final class TunnelRelay extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(TunnelRelay.class);

    private final TunnelSession session;
    private final Channel peer;
    private final boolean downstreamSide;

    /**
     * @param downstreamSide true for the relay on the client's channel, false for the origin's
     */
    TunnelRelay(TunnelSession session, Channel peer, boolean downstreamSide) {
        this.session = session;
        this.peer = peer;
        this.downstreamSide = downstreamSide;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!peer.isActive()) {
            ReferenceCountUtil.release(msg);
            return;
        }
        peer.write(msg).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                log.debug("tunnel write to {} failed: {} (cause: {})", f.channel(), f.cause(), f.cause().getCause());
                session.error("write failed: " + f.cause().getClass().getSimpleName());
                f.channel().close();
                ctx.close();
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
        // This channel drained: let the peer read again.
        if (ctx.channel().isWritable()) {
            Reads.setAutoRead(peer, true);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof io.netty.handler.timeout.IdleStateEvent) {
            session.error("idle_timeout");
            ctx.close();
            return;
        }
        if (evt instanceof ChannelInputShutdownEvent) {
            log.debug("tunnel channel {} input shut down", ctx.channel());
            boolean both = session.inputShutdown(downstreamSide);
            peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
                if (both || !(peer instanceof DuplexChannel duplex)) {
                    peer.close();
                    ctx.close();
                } else {
                    duplex.shutdownOutput();
                }
            });
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        log.debug("tunnel channel {} closed", ctx.channel());
        session.channelClosed();
        if (peer.isActive()) {
            peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("tunnel channel {} failed: {}", ctx.channel(), cause.toString());
        session.error(cause instanceof IOException ? "connection reset" : cause.getClass().getSimpleName());
        ctx.close();
    }
}
