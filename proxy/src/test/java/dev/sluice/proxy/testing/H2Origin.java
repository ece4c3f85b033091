package dev.sluice.proxy.testing;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyStore;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.KeyManagerFactory;

/**
 * An HTTP/2-only TLS origin on 127.0.0.1 (Netty's server frame codec; ALPN offers {@code h2} alone, so
 * a client that does not speak h2 fails its handshake). It records each request (method, path, body,
 * the protocol it came on) and counts TCP connections. Answers: {@code /ok/sse} a
 * {@code text/event-stream} of {@link #SSE_EVENTS} events, each flushed on its own: the first with the
 * head, each next one only when the test calls {@link #nextSseEvent()} (so a test shows an event reached
 * the client before the origin sent the next, without timing); {@code /ok/echo-head} a head-only 204 whose {@code x-echo} field repeats the
 * request's {@code Authorization}; anything else 200 {@code {"ok":true}} ({@code application/json}).
 */
public final class H2Origin implements AutoCloseable {

    /** Events of the SSE answer. */
    public static final int SSE_EVENTS = 5;

    /** One request as the origin saw it. */
    public record Seen(String method, String path, String body, String scheme, String te) {
    }

    private final EventLoopGroup group;
    private final Channel server;
    private final AtomicInteger connections = new AtomicInteger();
    private final List<Seen> requests = new CopyOnWriteArrayList<>();
    /** The {@code /ok/sse} answer in progress, and how many of its events were sent. */
    private volatile @org.jspecify.annotations.Nullable ChannelHandlerContext sse;
    private final AtomicInteger sseSent = new AtomicInteger();

    private H2Origin(TestTls tls) throws Exception {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(tls.keystore())) {
            keys.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, tls.keystorePassword().toCharArray());
        SslContext ssl = SslContextBuilder.forServer(kmf)
                .sslProvider(SslProvider.JDK)
                .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.FATAL_ALERT,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.FATAL_ALERT,
                        ApplicationProtocolNames.HTTP_2))
                .build();
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        connections.incrementAndGet();
                        ch.pipeline().addLast(ssl.newHandler(ch.alloc()));
                        ch.pipeline().addLast(Http2FrameCodecBuilder.forServer().build());
                        ch.pipeline().addLast(new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
                            @Override
                            protected void initChannel(Http2StreamChannel stream) {
                                stream.pipeline().addLast(new Http2StreamFrameToHttpObjectCodec(true));
                                stream.pipeline().addLast(new HttpObjectAggregator(1 << 20));
                                stream.pipeline().addLast(new Answer());
                            }
                        }));
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    /** Starts an origin serving the certificate of {@code tls}. */
    public static H2Origin start(TestTls tls) throws Exception {
        return new H2Origin(tls);
    }

    /** Returns the port on 127.0.0.1. */
    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Returns how many TCP connections were accepted. */
    public int connections() {
        return connections.get();
    }

    /** Returns the requests seen so far, in order of arrival. */
    public List<Seen> requests() {
        return List.copyOf(requests);
    }

    /**
     * Sends the next event of the {@code /ok/sse} answer in progress (the last one ends it).
     *
     * @throws IllegalStateException when no such answer is in progress
     */
    public void nextSseEvent() {
        ChannelHandlerContext ctx = sse;
        if (ctx == null) {
            throw new IllegalStateException("no /ok/sse answer in progress");
        }
        ctx.executor().execute(() -> writeSseEvent(ctx));
    }

    private void writeSseEvent(ChannelHandlerContext ctx) {
        int n = sseSent.getAndIncrement();
        if (n >= SSE_EVENTS) {
            return;
        }
        byte[] event = ("data: {\"delta\":\"part " + n + "\"}\n\n").getBytes(StandardCharsets.UTF_8);
        ctx.writeAndFlush(n == SSE_EVENTS - 1
                ? new DefaultLastHttpContent(Unpooled.wrappedBuffer(event))
                : new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
        if (n == SSE_EVENTS - 1) {
            sse = null;
        }
    }

    private final class Answer extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            requests.add(new Seen(request.method().name(), request.uri(),
                    request.content().toString(StandardCharsets.UTF_8),
                    request.headers().get("x-http2-scheme"), request.headers().get("te")));
            if (request.uri().startsWith("/ok/sse")) {
                HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
                head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
                ctx.writeAndFlush(head);
                sseSent.set(0);
                sse = ctx;
                writeSseEvent(ctx);
                return;
            }
            if (request.uri().startsWith("/ok/echo-head")) {
                // a head-only answer (HEADERS ending the stream) that echoes the authorization it received
                FullHttpResponse echo = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.NO_CONTENT);
                echo.headers().set("x-echo", request.headers().get(HttpHeaderNames.AUTHORIZATION, ""));
                ctx.writeAndFlush(echo);
                return;
            }
            FullHttpResponse answer = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
                    Unpooled.copiedBuffer("{\"ok\":true}", StandardCharsets.UTF_8));
            answer.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            answer.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, answer.content().readableBytes());
            ctx.writeAndFlush(answer);
        }
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
