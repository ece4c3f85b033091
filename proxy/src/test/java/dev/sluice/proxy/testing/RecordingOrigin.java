package dev.sluice.proxy.testing;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small real HTTP/1.1 origin on 127.0.0.1 (Netty, keep-alive) that records what it received:
 * every request's method, request-target, headers and body size and SHA-256 (bodies are hashed as they
 * stream; their first {@value #KEPT_BODY_BYTES} bytes are kept for {@link Seen#body()}), and how many TCP
 * connections were accepted. It answers 200 with the body {@code ok <bytes> <sha256>} so a test can
 * check both ends; {@code Expect: 100-continue} gets a {@code 100 Continue} first, marked
 * {@code X-Origin-Continue: yes}.
 *
 * <p>{@link #tls(TestTls, boolean)} makes it speak HTTPS with the test leaf, and optionally answer
 * {@code 411 Length Required} to a chunked request, as some real origins do.
 */
public final class RecordingOrigin implements AutoCloseable {

    /** Bytes of each request body kept for {@link Seen#body()}. */
    public static final int KEPT_BODY_BYTES = 4 << 20;

    /** One request as the origin saw it; {@code status} is what it answered. */
    public record Seen(String method, String uri, Map<String, List<String>> headers, long bodyBytes, String bodySha256,
                       byte[] body, int status) {
        public String header(String name) {
            List<String> values = headers.get(name.toLowerCase());
            return values == null ? null : String.join(",", values);
        }
    }

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger closedConnections = new AtomicInteger();
    private final java.util.concurrent.atomic.AtomicLong bytesReceived = new java.util.concurrent.atomic.AtomicLong();
    private final ConcurrentLinkedQueue<Seen> seen = new ConcurrentLinkedQueue<>();
    private final SslContext sslContext;
    private final boolean lengthRequired;

    public RecordingOrigin() throws InterruptedException {
        this(null, false);
    }

    /**
     * An HTTPS origin with the leaf of {@code tls}.
     *
     * @param lengthRequired answer 411 to a request whose body is chunked (and record it)
     */
    public static RecordingOrigin tls(TestTls tls, boolean lengthRequired) throws Exception {
        java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
        try (var in = java.nio.file.Files.newInputStream(tls.keystore())) {
            keys.load(in, tls.keystorePassword().toCharArray());
        }
        javax.net.ssl.KeyManagerFactory kmf = javax.net.ssl.KeyManagerFactory.getInstance(
                javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, tls.keystorePassword().toCharArray());
        return new RecordingOrigin(SslContextBuilder.forServer(kmf).build(), lengthRequired);
    }

    private RecordingOrigin(SslContext sslContext, boolean lengthRequired) throws InterruptedException {
        this.sslContext = sslContext;
        this.lengthRequired = lengthRequired;
        channel = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        connections.incrementAndGet();
                        ch.closeFuture().addListener(f -> closedConnections.incrementAndGet());
                        ch.pipeline().addLast(new io.netty.channel.ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                if (msg instanceof io.netty.buffer.ByteBuf buf) {
                                    bytesReceived.addAndGet(buf.readableBytes());
                                }
                                ctx.fireChannelRead(msg);
                            }
                        });
                        if (sslContext != null) {
                            ch.pipeline().addLast(sslContext.newHandler(ch.alloc()));
                        }
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpServerExpectContinueHandler() {
                                    @Override
                                    protected HttpResponse acceptMessage(HttpRequest request) {
                                        HttpResponse accept = super.acceptMessage(request);
                                        accept.headers().set("X-Origin-Continue", "yes");
                                        return accept;
                                    }
                                },
                                new Handler());
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    /** TCP connections accepted so far. */
    public int connections() {
        return connections.get();
    }

    /** TCP connections that have closed so far. */
    public int closedConnections() {
        return closedConnections.get();
    }

    /** Bytes received so far over all connections, as they came off the wire (before any parsing). */
    public long bytesReceived() {
        return bytesReceived.get();
    }

    public List<Seen> requests() {
        return List.copyOf(seen);
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).awaitUninterruptibly();
    }

    private final class Handler extends SimpleChannelInboundHandler<HttpObject> {
        private HttpRequest request;
        private long bytes;
        private MessageDigest digest;
        private java.io.ByteArrayOutputStream kept;

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) throws Exception {
            if (msg instanceof HttpRequest r) {
                request = r;
                bytes = 0;
                digest = MessageDigest.getInstance("SHA-256");
                kept = new java.io.ByteArrayOutputStream();
            }
            if (msg instanceof HttpContent c) {
                bytes += c.content().readableBytes();
                if (kept.size() < KEPT_BODY_BYTES) {
                    int n = Math.min(c.content().readableBytes(), KEPT_BODY_BYTES - kept.size());
                    kept.write(io.netty.buffer.ByteBufUtil.getBytes(c.content(), c.content().readerIndex(), n), 0, n);
                }
                digest.update(c.content().nioBuffer());
                if (msg instanceof LastHttpContent) {
                    Map<String, List<String>> headers = new TreeMap<>();
                    for (String name : request.headers().names()) {
                        headers.put(name.toLowerCase(), request.headers().getAll(name));
                    }
                    String sha = HexFormat.of().formatHex(digest.digest());
                    HttpResponseStatus status = lengthRequired && HttpUtil.isTransferEncodingChunked(request)
                            ? HttpResponseStatus.LENGTH_REQUIRED : HttpResponseStatus.OK;
                    seen.add(new Seen(request.method().name(), request.uri(), headers, bytes, sha, kept.toByteArray(),
                            status.code()));
                    String echo = request.headers().get("X-Echo-Header");
                    String coded = request.headers().get("X-Echo-Coding");
                    if (echo != null && coded != null) {
                        echoCoded(ctx, request.headers().get(echo, ""), coded);
                        return;
                    }
                    if (echo != null && request.headers().contains("X-Echo-Everywhere")) {
                        echoEverywhere(ctx, request.headers().get(echo, ""));
                        return;
                    }
                    if (echo != null) {
                        echo(ctx, request.headers().get(echo, ""));
                        return;
                    }
                    byte[] body = ("ok " + bytes + " " + sha).getBytes(StandardCharsets.UTF_8);
                    FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                            status, Unpooled.wrappedBuffer(body));
                    response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
                            .set(HttpHeaderNames.CONTENT_TYPE, "text/plain")
                            .set("X-Origin-Connection", ctx.channel().id().asShortText());
                    boolean keepAlive = HttpUtil.isKeepAlive(request);
                    if (!keepAlive) {
                        response.headers().set(HttpHeaderNames.CONNECTION, "close");
                    }
                    var f = ctx.writeAndFlush(response);
                    if (!keepAlive) {
                        f.addListener(ChannelFutureListener.CLOSE);
                    }
                }
            }
        }
    
        /**
         * Echoes {@code value} in a JSON body coded {@code coding}: gzip-compressed for {@code gzip}, else the
         * plain bytes labelled with {@code coding} (as an origin that ignores {@code Accept-Encoding} would).
         */
        private void echoCoded(ChannelHandlerContext ctx, String value, String coding) throws java.io.IOException {
            byte[] plain = ("{\"error\":\"bad key " + value + "\"}").getBytes(StandardCharsets.UTF_8);
            byte[] body = plain;
            if (coding.equals("gzip")) {
                java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
                try (var z = new java.util.zip.GZIPOutputStream(out)) {
                    z.write(plain);
                }
                body = out.toByteArray();
            }
            io.netty.handler.codec.http.DefaultHttpResponse head = new io.netty.handler.codec.http.DefaultHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_ENCODING, coding)
                    .set(HttpHeaderNames.CONTENT_TYPE, "application/json").setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
            ctx.write(head);
            int half = body.length / 2;
            ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultHttpContent(Unpooled.copiedBuffer(body, 0, half)));
            ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultLastHttpContent(
                    Unpooled.copiedBuffer(body, half, body.length - half)));
        }

        /**
         * Echoes {@code value} back (as an origin that reflects a key would): in an {@code X-Echo} header
         * and in a chunked {@code text/event-stream} body, split across two chunks mid-value, then raw,
         * JSON-escaped ({@code \\/}) and base64 in the last chunk.
         */
        /**
         * Echoes {@code value} where a careless origin might: the status line's reason phrase, a trailer
         * field of a chunked body, and inside base64 and base64url runs at each byte alignment (after 0, 1
         * and 2 other bytes, with bytes after it).
         */
        private void echoEverywhere(ChannelHandlerContext ctx, String value) {
            io.netty.handler.codec.http.DefaultHttpResponse head = new io.netty.handler.codec.http.DefaultHttpResponse(
                    HttpVersion.HTTP_1_1, new HttpResponseStatus(200, "OK " + value));
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain").set(HttpHeaderNames.TRAILER, "X-Echo-Trailer");
            HttpUtil.setTransferEncodingChunked(head, true);
            ctx.write(head);
            StringBuilder body = new StringBuilder();
            for (String before : new String[] {"", "A", "AA"}) {
                byte[] bytes = (before + value + "~tail").getBytes(StandardCharsets.UTF_8);
                body.append("b64 ").append(java.util.Base64.getEncoder().encodeToString(bytes)).append('\n');
                body.append("url ").append(java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(bytes))
                        .append('\n');
            }
            io.netty.handler.codec.http.DefaultLastHttpContent last = new io.netty.handler.codec.http.DefaultLastHttpContent(
                    Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
            last.trailingHeaders().set("X-Echo-Trailer", value);
            ctx.writeAndFlush(last);
        }

        private void echo(ChannelHandlerContext ctx, String value) {
            io.netty.handler.codec.http.DefaultHttpResponse head = new io.netty.handler.codec.http.DefaultHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set("X-Echo", value).set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream");
            HttpUtil.setTransferEncodingChunked(head, true);
            ctx.write(head);
            int half = value.length() / 2;
            ctx.write(new io.netty.handler.codec.http.DefaultHttpContent(Unpooled.copiedBuffer(
                    "data: {\"k\":\"" + value.substring(0, half), StandardCharsets.UTF_8)));
            ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultHttpContent(Unpooled.copiedBuffer(
                    value.substring(half) + "\"}\n\n", StandardCharsets.UTF_8)));
            String tail = "data: " + value + " " + value.replace("/", "\\/") + " "
                    + java.util.Base64.getEncoder().withoutPadding().encodeToString(value.getBytes(StandardCharsets.UTF_8))
                    + "\n\n";
            ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultLastHttpContent(
                    Unpooled.copiedBuffer(tail, StandardCharsets.UTF_8)));
        }
}
}
