package dev.sluice.benchmarks;

import dev.sluice.proxy.transport.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.AbstractEpollStreamChannel;
import io.netty.channel.epoll.EpollChannelOption;
import io.netty.channel.epoll.EpollMode;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A bare CONNECT relay for the benchmark harness only — not Sluice: no policy, no audit, no byte
 * counts, no idle timeout; it dials the CONNECT target on 127.0.0.1 whatever it names. It exists to
 * price the relay itself: {@code copy} moves every buffer through the JVM as Sluice's {@code TunnelRelay}
 * does; {@code splice} joins the two sockets with Netty's epoll {@code spliceTo} (splice(2) through a
 * pipe, no byte enters the JVM; both channels level-triggered, as the API requires). Both run on
 * Sluice's epoll transport ({@link Transport#epoll()}), one event loop per tunnel.
 *
 * <p>Usage: {@code RelayLauncher copy|splice PORT} (listens on 127.0.0.1:PORT).
 */
public final class RelayLauncher {

    private RelayLauncher() {
    }

    /** Listens on {@code 127.0.0.1:args[1]} with the relay {@code args[0]} until killed. */
    public static void main(String[] args) throws Exception {
        boolean splice = switch (args[0]) {
            case "copy" -> false;
            case "splice" -> true;
            default -> throw new IllegalArgumentException("copy or splice, got " + args[0]);
        };
        int port = Integer.parseInt(args[1]);
        Transport transport = Transport.epoll();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(0, transport.ioHandlerFactory());
        ServerBootstrap server = new ServerBootstrap().group(group).channel(transport.serverChannel())
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.AUTO_READ, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (splice) {
                            ch.config().setOption(EpollChannelOption.EPOLL_MODE, EpollMode.LEVEL_TRIGGERED);
                        }
                        ch.pipeline().addLast("head", new Head(transport, splice));
                    }
                });
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port)).sync();
        System.out.println("relay " + args[0] + " listening on " + port);
        Thread.currentThread().join();
    }

    /** Reads the CONNECT head, dials, answers 200, then joins the channels. */
    private static final class Head extends ChannelInboundHandlerAdapter {
        private final Transport transport;
        private final boolean splice;
        private final StringBuilder head = new StringBuilder();

        Head(Transport transport, boolean splice) {
            this.transport = transport;
            this.splice = splice;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                head.append(buf.toString(StandardCharsets.ISO_8859_1));
            } finally {
                buf.release();
            }
            int end = head.indexOf("\r\n\r\n");
            if (end < 0) {
                return;
            }
            // The benchmark client sends nothing behind its CONNECT before the 200.
            String target = head.substring(0, head.indexOf("\r\n")).split(" ")[1];
            int port = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
            Channel downstream = ctx.channel();
            downstream.config().setAutoRead(false);
            Bootstrap b = new Bootstrap().group(downstream.eventLoop()).channel(transport.socketChannel())
                    .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .handler(new ChannelInboundHandlerAdapter());
            if (splice) {
                b.option(EpollChannelOption.EPOLL_MODE, EpollMode.LEVEL_TRIGGERED);
            }
            b.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port)).addListener(
                    (ChannelFutureListener) f -> {
                        if (!f.isSuccess()) {
                            downstream.close();
                            return;
                        }
                        Channel upstream = f.channel();
                        downstream.writeAndFlush(Unpooled.copiedBuffer(
                                "HTTP/1.1 200 Connection established\r\n\r\n", StandardCharsets.US_ASCII))
                                .addListener((ChannelFutureListener) w -> join(ctx, downstream, upstream));
                    });
        }

        private void join(ChannelHandlerContext ctx, Channel downstream, Channel upstream) {
            upstream.pipeline().remove(upstream.pipeline().first());
            Session session = new Session();
            upstream.pipeline().addLast(new Relay(session, downstream));
            downstream.pipeline().addLast(new Relay(session, upstream));
            ctx.pipeline().remove(this);
            if (splice) {
                ((AbstractEpollStreamChannel) downstream).spliceTo((AbstractEpollStreamChannel) upstream,
                        Integer.MAX_VALUE);
                ((AbstractEpollStreamChannel) upstream).spliceTo((AbstractEpollStreamChannel) downstream,
                        Integer.MAX_VALUE);
            }
            upstream.config().setAutoRead(true);
            downstream.config().setAutoRead(true);
        }
    }

    private static final class Session {
        int inputsShut;
    }

    /** One direction: copies what is read (copy mode; with splice nothing is read here), passes the FIN on. */
    private static final class Relay extends ChannelInboundHandlerAdapter {
        private final Session session;
        private final Channel peer;

        Relay(Session session, Channel peer) {
            this.session = session;
            this.peer = peer;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!peer.isActive()) {
                ReferenceCountUtil.release(msg);
                return;
            }
            peer.write(msg);
            if (!peer.isWritable()) {
                ctx.channel().config().setAutoRead(false);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            peer.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                peer.config().setAutoRead(true);
            }
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                boolean both = ++session.inputsShut == 2;
                // Behind whatever waits for the peer (splice-out tasks included), then the FIN.
                peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
                    if (both) {
                        peer.close();
                        ctx.close();
                    } else {
                        ((DuplexChannel) peer).shutdownOutput();
                    }
                });
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (peer.isActive()) {
                peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
