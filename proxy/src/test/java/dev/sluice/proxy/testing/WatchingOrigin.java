package dev.sluice.proxy.testing;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.util.ReferenceCountUtil;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyStore;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;

/**
 * A real HTTP/1.1 origin on 127.0.0.1 (Netty; plain, or TLS with a {@link TestTls} leaf) that watches
 * each TCP connection: the bytes that arrived on the socket, the request heads and complete requests it
 * read, and whether the peer closed it. It answers {@code 200 ok <body bytes>} only once a request is
 * complete, so a request that never completes never gets an answer from it.
 */
public final class WatchingOrigin implements AutoCloseable {

    /** One accepted connection, as the origin sees it (updated live from the origin's event loop). */
    public static final class Connection {
        private final AtomicLong rawBytes = new AtomicLong();
        private final AtomicLong bodyBytes = new AtomicLong();
        private final ConcurrentLinkedQueue<String> heads = new ConcurrentLinkedQueue<>();
        private final ConcurrentLinkedQueue<String> completed = new ConcurrentLinkedQueue<>();
        private volatile boolean closed;

        /** Bytes read off the socket so far (after TLS, if any: HTTP bytes). */
        public long rawBytes() {
            return rawBytes.get();
        }

        /** Body bytes of the request in progress (or of the last one) read so far. */
        public long bodyBytes() {
            return bodyBytes.get();
        }

        /** Request-targets of the request heads read so far. */
        public List<String> heads() {
            return List.copyOf(heads);
        }

        /** Request-targets of the requests read in full (last chunk or Content-Length reached). */
        public List<String> completed() {
            return List.copyOf(completed);
        }

        /** Whether the connection has closed. */
        public boolean closed() {
            return closed;
        }
    }

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;
    private final ConcurrentLinkedQueue<Connection> connections = new ConcurrentLinkedQueue<>();

    /** Starts a plain HTTP origin. */
    public WatchingOrigin() throws Exception {
        this(null);
    }

    /** Starts an origin that speaks TLS with the leaf of {@code tls}, or plain HTTP when null. */
    public WatchingOrigin(TestTls tls) throws Exception {
        SslContext ssl = tls == null ? null : serverContext(tls);
        channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        Connection c = new Connection();
                        connections.add(c);
                        ch.closeFuture().addListener(f -> c.closed = true);
                        if (ssl != null) {
                            ch.pipeline().addLast(ssl.newHandler(ch.alloc()));
                        }
                        ch.pipeline().addLast(new Counter(c), new HttpServerCodec(), new Handler(c));
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private static SslContext serverContext(TestTls tls) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(tls.keystore())) {
            store.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, tls.keystorePassword().toCharArray());
        return SslContextBuilder.forServer(kmf).build();
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** Every connection accepted so far, oldest first. */
    public List<Connection> connections() {
        return List.copyOf(connections);
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    private static final class Counter extends ChannelInboundHandlerAdapter {
        private final Connection connection;

        Counter(Connection connection) {
            this.connection = connection;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf buf) {
                connection.rawBytes.addAndGet(buf.readableBytes());
            }
            ctx.fireChannelRead(msg);
        }
    }

    private static final class Handler extends ChannelInboundHandlerAdapter {
        private final Connection connection;
        private String uri;

        Handler(Connection connection) {
            this.connection = connection;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof HttpRequest request) {
                    if (request.decoderResult().isFailure()) {
                        ctx.close();
                        return;
                    }
                    uri = request.uri();
                    connection.bodyBytes.set(0);
                    connection.heads.add(uri);
                }
                if (msg instanceof HttpContent content) {
                    if (content.decoderResult().isFailure()) {
                        // A body cut short (the peer closed): never a complete request.
                        return;
                    }
                    connection.bodyBytes.addAndGet(content.content().readableBytes());
                    if (msg instanceof LastHttpContent) {
                        connection.completed.add(uri);
                        byte[] body = ("ok " + connection.bodyBytes.get()).getBytes(StandardCharsets.UTF_8);
                        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                HttpResponseStatus.OK, Unpooled.wrappedBuffer(body));
                        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
                        ctx.writeAndFlush(response);
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
