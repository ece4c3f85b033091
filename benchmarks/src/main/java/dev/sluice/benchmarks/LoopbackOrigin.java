package dev.sluice.benchmarks;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * Origins for the load harness, on 127.0.0.1 only:
 * <ul>
 *   <li>{@code http PORT}: HTTP/1.1 keep-alive, every request answered 200 with a 13-byte body;</li>
 *   <li>{@code bulk PORT BYTES}: raw TCP, every connection is sent {@code BYTES} zero bytes, then closed.</li>
 * </ul>
 * Usage: {@code java -cp benchmarks.jar dev.sluice.benchmarks.LoopbackOrigin http 18080}.
 */
public final class LoopbackOrigin {

    private static final byte[] SMALL = "hello, world\n".getBytes(StandardCharsets.US_ASCII);

    private LoopbackOrigin() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int port = Integer.parseInt(args[1]);
        long bulkBytes = args.length > 2 ? Long.parseLong(args[2]) : 0;
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
                epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        Class<? extends ServerSocketChannel> type = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        Channel channel = new ServerBootstrap().group(group).channel(type)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (mode.equals("http")) {
                            ch.pipeline().addLast(new HttpServerCodec(), new SmallResponses());
                        } else {
                            ch.pipeline().addLast(new BulkSender(bulkBytes));
                        }
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        System.err.println("origin " + mode + " on " + channel.localAddress());
        channel.closeFuture().sync();
    }

    private static final class SmallResponses extends ChannelInboundHandlerAdapter {
        private boolean keepAlive;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest request) {
                keepAlive = HttpUtil.isKeepAlive(request);
            }
            if (msg instanceof LastHttpContent) {
                FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                        Unpooled.wrappedBuffer(SMALL));
                response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, SMALL.length)
                        .set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
                if (keepAlive) {
                    ctx.writeAndFlush(response);
                } else {
                    response.headers().set(HttpHeaderNames.CONNECTION, "close");
                    ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
                }
            }
            ReferenceCountUtil.release(msg);
        }
    }

    private static final class BulkSender extends ChannelInboundHandlerAdapter {
        private static final int CHUNK = 256 * 1024;
        private final long total;
        private long sent;
        private ByteBuf chunk;

        BulkSender(long total) {
            this.total = total;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            chunk = Unpooled.directBuffer(CHUNK).writeZero(CHUNK);
            writeMore(ctx);
        }

        private void writeMore(ChannelHandlerContext ctx) {
            while (sent < total && ctx.channel().isWritable()) {
                int n = (int) Math.min(CHUNK, total - sent);
                sent += n;
                ctx.write(chunk.retainedSlice(0, n));
            }
            ctx.flush();
            if (sent >= total) {
                ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable() && sent < total) {
                writeMore(ctx);
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (chunk != null) {
                chunk.release();
            }
        }
    }
}
