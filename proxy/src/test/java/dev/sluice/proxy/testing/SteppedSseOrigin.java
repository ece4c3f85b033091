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
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.KeyStore;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.KeyManagerFactory;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP/1.1 TLS origin on 127.0.0.1 (Netty, a {@link TestTls} leaf) that answers every request with
 * a chunked {@code 200 text/event-stream} of the events it was given, stepped by the test: the first
 * event goes with the head, each next one only when the test calls {@link #next()}, each flushed on
 * its own. A test that calls {@link #next()} only after its client has read the event before thereby
 * shows, without timing, that the proxy between them relays event by event: a proxy that held the
 * answer back would leave the client waiting for an event the origin never sends.
 *
 * <p>Hang guard: if {@link #next()} does not come within {@value #HANG_GUARD_SECONDS} s of an event,
 * the origin gives up on the answer and closes the connection without ending it (so a proxy that holds
 * events back makes the test fail with a cut answer rather than hang); {@link #gaveUp()} then says so.
 */
public final class SteppedSseOrigin implements AutoCloseable {

    /** Seconds the origin waits for {@link #next()} before it abandons the answer. */
    public static final long HANG_GUARD_SECONDS = 20;

    private final List<String> events;
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel server;
    private final List<String> requests = new CopyOnWriteArrayList<>();
    /** The answer in progress, and how many of its events were sent. */
    private volatile @Nullable ChannelHandlerContext answer;
    private final AtomicInteger sent = new AtomicInteger();
    private final AtomicBoolean gaveUp = new AtomicBoolean();

    private SteppedSseOrigin(TestTls tls, List<String> events) throws Exception {
        this.events = List.copyOf(events);
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(tls.keystore())) {
            keys.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, tls.keystorePassword().toCharArray());
        SslContext ssl = SslContextBuilder.forServer(kmf).build();
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(ssl.newHandler(ch.alloc()), new HttpServerCodec(),
                                new HttpObjectAggregator(1 << 20), new Answer());
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    /**
     * Starts an origin serving the leaf of {@code tls} that answers with {@code events}, each a complete
     * SSE event as it goes on the wire (e.g. {@code "data: {...}\n\n"}).
     *
     * @throws IllegalArgumentException when {@code events} is empty
     */
    public static SteppedSseOrigin start(TestTls tls, List<String> events) throws Exception {
        if (events.isEmpty()) {
            throw new IllegalArgumentException("no events");
        }
        return new SteppedSseOrigin(tls, events);
    }

    /** Returns the port on 127.0.0.1. */
    public int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Returns the request-targets seen so far, in order of arrival. */
    public List<String> requests() {
        return List.copyOf(requests);
    }

    /** Returns how many events of the answer in progress (or the last one) were sent. */
    public int sent() {
        return sent.get();
    }

    /** Returns whether the hang guard fired: the origin waited for {@link #next()} in vain. */
    public boolean gaveUp() {
        return gaveUp.get();
    }

    /**
     * Sends the next event of the answer in progress (the last one ends the answer).
     *
     * @throws IllegalStateException when no answer is in progress
     */
    public void next() {
        ChannelHandlerContext ctx = answer;
        if (ctx == null) {
            throw new IllegalStateException("no answer in progress");
        }
        ctx.executor().execute(() -> writeEvent(ctx));
    }

    private void writeEvent(ChannelHandlerContext ctx) {
        int n = sent.get();
        if (n >= events.size() || answer != ctx) {
            return;
        }
        sent.incrementAndGet();
        byte[] event = events.get(n).getBytes(StandardCharsets.UTF_8);
        boolean last = n == events.size() - 1;
        ctx.writeAndFlush(last ? new DefaultLastHttpContent(Unpooled.wrappedBuffer(event))
                : new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
        if (last) {
            answer = null;
            return;
        }
        ctx.executor().schedule(() -> {
            if (answer == ctx && sent.get() == n + 1) {
                gaveUp.set(true);
                answer = null;
                ctx.close();
            }
        }, HANG_GUARD_SECONDS, TimeUnit.SECONDS);
    }

    private final class Answer extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
            requests.add(request.uri());
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
            HttpUtil.setTransferEncodingChunked(head, true);
            ctx.write(head);
            sent.set(0);
            answer = ctx;
            writeEvent(ctx);
        }
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
