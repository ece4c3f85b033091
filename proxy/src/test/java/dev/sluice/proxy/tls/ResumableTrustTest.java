package dev.sluice.proxy.tls;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.sluice.certs.PinMismatchException;
import dev.sluice.certs.PinMode;
import dev.sluice.certs.PinPolicy;
import dev.sluice.certs.PinStore;
import dev.sluice.certs.PinVerifier;
import dev.sluice.certs.PinningTrustManager;
import dev.sluice.certs.SpkiPin;
import dev.sluice.certs.UpstreamTrust;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.TestTls;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.LoggerFactory;

/**
 * The backstop behind "no upstream resumption": with session resumption left ON (as Netty's default
 * is, unlike Sluice's upstream context), a resumed session is checked again by {@link ResumableTrust}
 * under the pin policy of now. A real Netty client, both TLS providers, to a WireMock TLS origin on
 * loopback: a full handshake under the right pin, then the pin changes, and the next connection —
 * resumed — fails with a pin mismatch.
 */
class ResumableTrustTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private EventLoopGroup group;
    private ExecutorService tasks;
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void start() throws Exception {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("ok")));
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        tasks = Executors.newSingleThreadExecutor();
        logged.start();
        ((Logger) LoggerFactory.getLogger(ResumableTrust.class)).addAppender(logged);
    }

    @AfterEach
    void stop() {
        ((Logger) LoggerFactory.getLogger(ResumableTrust.class)).detachAppender(logged);
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        tasks.shutdownNow();
        origin.close();
    }

    @ParameterizedTest
    @EnumSource(value = SslProvider.class, names = {"OPENSSL", "JDK"})
    void aResumedSessionIsCheckedAgainUnderTheCurrentPins(SslProvider provider) throws Exception {
        AtomicReference<PinPolicy> policy = new AtomicReference<>(
                PinPolicy.explicit(List.of(SpkiPin.of(origin.tls().caCertificate())), PinMode.ENFORCE));
        PinVerifier verifier = new PinVerifier(UpstreamTrust.systemPlus(List.of(origin.tls().caCertificate())),
                host -> policy.get(), PinStore.open(dir.resolve("data")));
        SslContext context = SslContextBuilder.forClient().sslProvider(provider)
                .trustManager(new ResumableTrust(new PinningTrustManager(verifier))).build();

        assertThat(exchange(context, "/full").get(10, TimeUnit.SECONDS)).startsWith("HTTP/1.1 200");
        assertThat(logged.list).isEmpty();

        policy.set(PinPolicy.explicit(List.of("sha256/" + Base64.getEncoder().encodeToString(new byte[32])),
                PinMode.ENFORCE));
        CompletableFuture<String> resumed = exchange(context, "/resumed");
        assertThat(resumed).failsWithin(10, TimeUnit.SECONDS).withThrowableThat()
                .satisfies(e -> assertThat(PinMismatchException.find(e)).isPresent());
        assertThat(logged.list).singleElement()
                .satisfies(e -> assertThat(e.getFormattedMessage()).contains("was resumed"));
        assertThat(origin.server().findAll(anyRequestedFor(urlEqualTo("/resumed")))).isEmpty();
    }

    /**
     * Connects, writes a GET at once (held by the SslHandler until its handshake completes), and
     * completes with the response's bytes, or exceptionally with the handshake's failure.
     */
    private CompletableFuture<String> exchange(SslContext context, String path) {
        CompletableFuture<String> result = new CompletableFuture<>();
        StringBuilder response = new StringBuilder();
        Bootstrap bootstrap = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        SslHandler tls = context.newHandler(ch.alloc(), HOST, origin.httpsPort(), tasks);
                        tls.handshakeFuture().addListener(f -> {
                            if (!f.isSuccess()) {
                                result.completeExceptionally(f.cause());
                            }
                        });
                        InterceptionTls.install(ch.pipeline(), tls);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                try {
                                    response.append(((ByteBuf) msg).toString(StandardCharsets.ISO_8859_1));
                                } finally {
                                    ReferenceCountUtil.release(msg);
                                }
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                result.complete(response.toString());
                            }

                            @Override
                            public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                result.completeExceptionally(cause);
                                ctx.close();
                            }
                        });
                    }
                });
        bootstrap.connect("127.0.0.1", origin.httpsPort()).addListener(f -> {
            if (!f.isSuccess()) {
                result.completeExceptionally(f.cause());
                return;
            }
            Channel ch = ((io.netty.channel.ChannelFuture) f).channel();
            ch.writeAndFlush(Unpooled.copiedBuffer("GET " + path + " HTTP/1.1\r\nHost: " + HOST
                    + "\r\nConnection: close\r\n\r\n", StandardCharsets.US_ASCII));
        });
        return result;
    }
}
