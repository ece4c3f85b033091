package dev.sluice.benchmarks;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelOption;
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
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Origins for the load harness, on 127.0.0.1 only:
 * <ul>
 *   <li>{@code http=PORT}: HTTP/1.1 keep-alive, every request answered 200 with a 13-byte body;</li>
 *   <li>{@code https=PORT}: the same behind TLS (self-signed certificate, see {@link SelfSignedTls});</li>
 *   <li>{@code sse=PORT}: TLS; reads a whole request (a POST body of up to 1 MiB) and answers 200
 *       {@code text/event-stream}, chunked, with {@value #SSE_EVENTS} events of about 100 bytes, like an
 *       LLM API's streamed answer; keep-alive;</li>
 *   <li>{@code bulk=PORT:BYTES}: raw TCP, every connection is sent {@code BYTES} zero bytes, then closed.</li>
 * </ul>
 * Usage: {@code java -cp benchmarks.jar dev.sluice.benchmarks.LoopbackOrigin [--cert-out FILE] SPEC...},
 * e.g. {@code http=18080 https=18443 sse=18444 bulk=18081:1073741824 --cert-out origin.pem}. The
 * certificate is written as PEM to {@code --cert-out} before any port is bound; clients trust it as
 * their CA file. The older form {@code http PORT} / {@code bulk PORT BYTES} still works. One JVM, one
 * event loop group of two threads serves every origin; {@code ready} is printed on stdout once all
 * ports are bound.
 */
public final class LoopbackOrigin {

    private static final byte[] SMALL = "hello, world\n".getBytes(StandardCharsets.US_ASCII);
    private static final int SSE_EVENTS = 32;
    private static final int MAX_POST_BYTES = 1 << 20;

    private LoopbackOrigin() {
    }

    /** Starts the origins named by {@code args} (see the class comment) and blocks until they close. */
    public static void main(String[] args) throws Exception {
        List<String> specs = new ArrayList<>();
        Path certOut = null;
        if (args.length >= 2 && !args[0].contains("=") && !args[0].startsWith("--")) {
            specs.add(args[0] + "=" + args[1] + (args.length > 2 ? ":" + args[2] : ""));
        } else {
            for (int i = 0; i < args.length; i++) {
                if (args[i].equals("--cert-out")) {
                    certOut = Path.of(args[++i]);
                } else {
                    specs.add(args[i]);
                }
            }
        }
        SelfSignedTls tls = SelfSignedTls.generate();
        if (certOut != null) {
            tls.writeCertificate(certOut);
        }
        SslContext sslContext = SslContextBuilder.forServer(tls.key(), tls.certificate())
                .sslProvider(SslProvider.JDK).build();
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2,
                epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        Class<? extends ServerSocketChannel> type = epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        List<Channel> channels = new ArrayList<>();
        for (String spec : specs) {
            String mode = spec.substring(0, spec.indexOf('='));
            String[] rest = spec.substring(spec.indexOf('=') + 1).split(":");
            int port = Integer.parseInt(rest[0]);
            long bulkBytes = rest.length > 1 ? Long.parseLong(rest[1]) : 0;
            ChannelInitializer<Channel> init = new ChannelInitializer<>() {
                @Override
                protected void initChannel(Channel ch) {
                    switch (mode) {
                        case "http" -> ch.pipeline().addLast(new HttpServerCodec(), new SmallResponses());
                        case "https" -> ch.pipeline().addLast(sslContext.newHandler(ch.alloc()), new HttpServerCodec(),
                                new SmallResponses());
                        case "sse" -> ch.pipeline().addLast(sslContext.newHandler(ch.alloc()), new HttpServerCodec(),
                                new HttpObjectAggregator(MAX_POST_BYTES), new SseResponses());
                        case "bulk" -> ch.pipeline().addLast(new BulkSender(bulkBytes));
                        default -> throw new IllegalArgumentException("mode: " + mode
                                + " (expected: http, https, sse or bulk)");
                    }
                }
            };
            Channel channel = new ServerBootstrap().group(group).channel(type)
                    .option(ChannelOption.SO_BACKLOG, 4096)
                    .childHandler(init)
                    .bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            channels.add(channel);
            System.err.println("origin " + mode + " on " + channel.localAddress());
        }
        System.out.println("ready");
        System.out.flush();
        for (Channel channel : channels) {
            channel.closeFuture().sync();
        }
    }

    /** Answers every complete request with {@value #SSE_EVENTS} server-sent events, chunked. */
    private static final class SseResponses extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof FullHttpRequest request)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            try {
                boolean keepAlive = HttpUtil.isKeepAlive(request);
                int received = request.content().readableBytes();
                DefaultHttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
                response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
                        .set(HttpHeaderNames.CACHE_CONTROL, "no-cache")
                        .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                if (!keepAlive) {
                    response.headers().set(HttpHeaderNames.CONNECTION, "close");
                }
                ctx.write(response);
                for (int i = 0; i < SSE_EVENTS; i++) {
                    String event = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"
                            + i + ",\"delta\":{\"type\":\"text_delta\",\"text\":\"token " + i + "\"}}\n\n";
                    ctx.write(new DefaultHttpContent(Unpooled.copiedBuffer(event, StandardCharsets.US_ASCII)));
                }
                String done = "event: message_stop\ndata: {\"type\":\"message_stop\",\"received\":" + received + "}\n\n";
                ChannelFuture last = ctx.writeAndFlush(new DefaultLastHttpContent(
                        Unpooled.copiedBuffer(done, StandardCharsets.US_ASCII)));
                if (!keepAlive) {
                    last.addListener(ChannelFutureListener.CLOSE);
                }
            } finally {
                request.release();
            }
        }
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
