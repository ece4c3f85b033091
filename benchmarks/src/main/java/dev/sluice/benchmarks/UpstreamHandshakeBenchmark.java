package dev.sluice.benchmarks;

import dev.sluice.certs.PinMode;
import dev.sluice.certs.PinPolicy;
import dev.sluice.certs.PinStore;
import dev.sluice.certs.PinVerifier;
import dev.sluice.certs.PinningTrustManager;
import dev.sluice.certs.SpkiPin;
import dev.sluice.certs.UpstreamTrust;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.OpenSslSessionContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What turning upstream session resumption off costs (docs/architecture.md, "Upstream trust on every
 * connection"): one operation is a TCP connect to a loopback TLS origin, a TLS handshake whose chain the
 * certs module's {@link PinningTrustManager} validates and pins (an explicit SPKI pin, enforced), one
 * byte of application data read (so that a TLS 1.3 session ticket has arrived) and the close.
 * {@code resumption=false} is how Sluice dials upstream (no client session cache; the engine gets no
 * peer port, which the JDK's cache is keyed by), {@code resumption=true} the same context with the cache
 * on and the port given, so every handshake after the first resumes. Both TLS providers.
 * Average time per operation, in milliseconds.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar UpstreamHandshakeBenchmark -f 1 -wi 3 -i 5 -w 2s -r 2s}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class UpstreamHandshakeBenchmark {

    private static final String HOST = "localhost";

    /** {@code OPENSSL} (BoringSSL through netty-tcnative) or {@code JDK}. */
    @Param({"OPENSSL", "JDK"})
    public String provider;

    /** Whether the client caches sessions and so resumes them. */
    @Param({"false", "true"})
    public boolean resumption;

    private EventLoopGroup group;
    private ExecutorService tasks;
    private Channel server;
    private SslContext client;
    private int port;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        SslProvider sslProvider = SslProvider.valueOf(provider);
        SelfSignedTls tls = SelfSignedTls.generate();
        group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        tasks = Executors.newSingleThreadExecutor();
        SslContext serverContext = SslContextBuilder.forServer(tls.key(), tls.certificate())
                .sslProvider(sslProvider).build();
        server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(serverContext.newHandler(ch.alloc()), new ChannelInboundHandlerAdapter() {
                            @Override
                            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                if (evt instanceof SslHandshakeCompletionEvent done && done.isSuccess()) {
                                    ctx.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {'x'}));
                                }
                                ctx.fireUserEventTriggered(evt);
                            }

                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ReferenceCountUtil.release(msg);
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                ctx.close();
                            }
                        });
                    }
                })
                .bind("127.0.0.1", 0).sync().channel();
        port = ((InetSocketAddress) server.localAddress()).getPort();
        PinVerifier verifier = new PinVerifier(UpstreamTrust.only(List.of(tls.certificate())),
                host -> PinPolicy.explicit(List.of(SpkiPin.of(tls.certificate())), PinMode.ENFORCE),
                PinStore.open(Files.createTempDirectory("sluice-handshake-bench")));
        client = SslContextBuilder.forClient().sslProvider(sslProvider)
                .trustManager(new PinningTrustManager(verifier)).build();
        if (!resumption && client.sessionContext() instanceof OpenSslSessionContext sessions) {
            sessions.setSessionCacheEnabled(false);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        server.close().sync();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        tasks.shutdownNow();
    }

    /** Connects, handshakes, reads the origin's one byte and closes; returns the byte count read (1). */
    @Benchmark
    public int handshake() throws Exception {
        CompletableFuture<Integer> done = new CompletableFuture<>();
        int peerPort = resumption ? port : -1;
        new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        SslHandler tls = client.newHandler(ch.alloc(), HOST, peerPort, tasks);
                        tls.handshakeFuture().addListener(f -> {
                            if (!f.isSuccess()) {
                                done.completeExceptionally(f.cause());
                            }
                        });
                        ch.pipeline().addLast(tls, new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ReferenceCountUtil.release(msg);
                                ctx.close().addListener(c -> done.complete(1));
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                done.completeExceptionally(cause);
                                ctx.close();
                            }
                        });
                    }
                })
                .connect("127.0.0.1", port);
        return done.get(10, TimeUnit.SECONDS);
    }
}
