package dev.sluice.benchmarks;

import dev.sluice.proxy.transport.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.OpenSslSessionContext;
import io.netty.handler.ssl.ReferenceCountedOpenSslEngine;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.netty.internal.tcnative.SSL;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLEngine;

/**
 * A TLS load client that is not the bottleneck: Netty (epoll when available, else NIO) with BoringSSL
 * (netty-tcnative, {@code SslProvider.OPENSSL}), event-driven, a few threads for many connections. Through
 * an HTTP proxy it sends {@code CONNECT host:port}, then TLS (SNI = host when it is a name, the server
 * verified against exactly the CA PEM {@code --ca}, host name checked), then HTTP/1.1 requests; without a
 * proxy it dials {@code --address} and does the same TLS.
 *
 * <p>Modes ({@code --mode}):
 * <ul>
 *   <li>{@code keepalive}: {@code --connections} tunnels, each with one TLS session for the whole run and
 *       {@code --pipeline} GETs of {@code --path} in flight (1 = one at a time; more = HTTP/1.1 pipelining);</li>
 *   <li>{@code new}: {@code --connections} workers, each doing a new TCP connection + CONNECT + TLS handshake
 *       + one GET ({@code Connection: close}) + close per request; the latency runs from the TCP connect to
 *       the end of the answer. {@code --resume true} (default) lets the client offer its last TLS session
 *       (ticket) for the same host, {@code false} makes every handshake a full one;</li>
 *   <li>{@code sse}: like keepalive, but each request is a 64 KiB JSON POST ({@link SseLoad#jsonBody()}) to
 *       {@code --path} (default {@code /v1/messages}) answered by a {@code text/event-stream} read to its end.</li>
 * </ul>
 *
 * <p>Only requests that start after the warm-up and end before the end of the measured period are counted;
 * latencies are kept per worker (nanoseconds, on the worker's event loop) and sorted at the end: exact
 * quantiles, no histogram library. Prints one JSON line: {@code requests}, {@code all_requests} (warm-up
 * included), {@code errors}, {@code seconds}, {@code rps}, {@code p50_ms}, {@code p99_ms}, {@code max_ms},
 * {@code first_error}, {@code handshakes}, {@code resumed} (handshakes that resumed a session, read from
 * BoringSSL; -1 on the JDK provider), {@code response_bytes} (body of the last answer),
 * {@code client_cpu_seconds} (this JVM's CPU time over the measured period) and
 * {@code client_cpu_us_per_request}, {@code tls_provider}, {@code transport}.
 *
 * <p>Usage: {@code NettyTlsLoad --target HOST:PORT --ca FILE [--proxy [HOST:]PORT] [--address 127.0.0.1]
 * [--mode keepalive|new|sse] [--connections N] [--pipeline 1] [--resume true] [--seconds 10] [--warmup 2]
 * [--threads 2] [--path /small]}; {@code --proxy 0} or none is direct.
 */
public final class NettyTlsLoad {

    private enum Mode { KEEPALIVE, NEW, SSE }

    private final Mode mode;
    private final String host;
    private final int port;
    private final InetSocketAddress proxy;
    private final InetSocketAddress direct;
    private final int pipeline;
    private final SslContext tls;
    private final SslProvider provider;
    private final Transport transport;
    private final ByteBuf request;
    private final byte[] connect;
    private long measureFrom;
    private long end;
    private CountDownLatch finished;

    private NettyTlsLoad(Map<String, String> o) throws IOException {
        mode = Mode.valueOf(o.getOrDefault("mode", "keepalive").toUpperCase(Locale.ROOT));
        String target = o.get("target");
        if (target == null || target.lastIndexOf(':') < 0) {
            throw new IllegalArgumentException("--target: " + target + " (expected: HOST:PORT)");
        }
        host = target.substring(0, target.lastIndexOf(':'));
        port = Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
        String p = o.getOrDefault("proxy", "0");
        String proxyHost = p.contains(":") ? p.substring(0, p.lastIndexOf(':')) : "127.0.0.1";
        int proxyPort = Integer.parseInt(p.substring(p.lastIndexOf(':') + 1));
        proxy = proxyPort == 0 ? null : new InetSocketAddress(proxyHost, proxyPort);
        direct = new InetSocketAddress(o.getOrDefault("address", "127.0.0.1"), port);
        pipeline = mode == Mode.NEW ? 1 : Math.max(1, Integer.parseInt(o.getOrDefault("pipeline", "1")));
        transport = Transport.detect(false);
        provider = OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
        tls = SslContextBuilder.forClient().sslProvider(provider).trustManager(new java.io.File(o.get("ca")))
                .endpointIdentificationAlgorithm("HTTPS").build();
        if (!Boolean.parseBoolean(o.getOrDefault("resume", "true"))) {
            if (tls.sessionContext() instanceof OpenSslSessionContext sessions) {
                sessions.setSessionCacheEnabled(false);
            } else {
                tls.sessionContext().setSessionTimeout(1);
                tls.sessionContext().setSessionCacheSize(1);
            }
        }
        String authority = host + ":" + port;
        String head;
        byte[] body = new byte[0];
        if (mode == Mode.SSE) {
            body = SseLoad.jsonBody();
            head = "POST " + o.getOrDefault("path", "/v1/messages") + " HTTP/1.1\r\nHost: " + authority
                    + "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "
                    + body.length + "\r\n\r\n";
        } else {
            head = "GET " + o.getOrDefault("path", "/small") + " HTTP/1.1\r\nHost: " + authority + "\r\n"
                    + (mode == Mode.NEW ? "Connection: close\r\n" : "") + "\r\n";
        }
        ByteBuf bytes = Unpooled.directBuffer(head.length() + body.length);
        bytes.writeBytes(head.getBytes(StandardCharsets.US_ASCII)).writeBytes(body);
        request = Unpooled.unreleasableBuffer(bytes.asReadOnly());
        connect = ("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
    }

    /** Runs the load described in the class comment and prints its JSON line; see the class comment for {@code args}. */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = LoadRunner.options(args);
        NettyTlsLoad load = new NettyTlsLoad(o);
        Mode mode = load.mode;
        int connections = Integer.parseInt(o.getOrDefault("connections",
                mode == Mode.KEEPALIVE ? "64" : mode == Mode.NEW ? "16" : "8"));
        int threads = Integer.parseInt(o.getOrDefault("threads",
                String.valueOf(Math.min(2, Runtime.getRuntime().availableProcessors()))));
        System.out.println(load.run(connections, threads, Double.parseDouble(o.getOrDefault("warmup", "2")),
                Double.parseDouble(o.getOrDefault("seconds", "10"))));
    }

    private String run(int connections, int threads, double warmupSeconds, double seconds) throws InterruptedException {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, transport.ioHandlerFactory());
        long start = System.nanoTime();
        measureFrom = start + (long) (warmupSeconds * 1e9);
        end = measureFrom + (long) (seconds * 1e9);
        finished = new CountDownLatch(connections);
        List<Worker> workers = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            Worker worker = new Worker(group.next());
            workers.add(worker);
            worker.loop.execute(worker::open);
        }
        sleepUntil(measureFrom);
        long cpu0 = processCpuNanos();
        sleepUntil(end);
        long cpu1 = processCpuNanos();
        finished.await(20, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();

        long all = 0;
        long errors = 0;
        long handshakes = 0;
        long resumed = 0;
        long responseBytes = 0;
        String firstError = null;
        int total = 0;
        for (Worker w : workers) {
            total += w.count;
        }
        long[] nanos = new long[total];
        int at = 0;
        for (Worker w : workers) {
            System.arraycopy(w.nanos, 0, nanos, at, w.count);
            at += w.count;
            all += w.completed;
            errors += w.errors;
            handshakes += w.handshakes;
            resumed += w.resumed;
            responseBytes = Math.max(responseBytes, w.responseBytes);
            if (firstError == null) {
                firstError = w.firstError;
            }
        }
        Arrays.sort(nanos);
        boolean openssl = provider == SslProvider.OPENSSL;
        double cpuSeconds = (cpu1 - cpu0) / 1e9;
        return String.format(Locale.ROOT,
                "{\"requests\":%d,\"all_requests\":%d,\"errors\":%d,\"seconds\":%.3f,\"rps\":%.1f,\"p50_ms\":%.3f,"
                        + "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"first_error\":%s,\"handshakes\":%d,\"resumed\":%d,"
                        + "\"response_bytes\":%d,\"client_cpu_seconds\":%.3f,\"client_cpu_us_per_request\":%s,"
                        + "\"tls_provider\":\"%s\",\"transport\":\"%s\",\"mode\":\"%s\",\"connections\":%d,"
                        + "\"pipeline\":%d}",
                total, all, errors, seconds, total / seconds, quantile(nanos, 0.50), quantile(nanos, 0.99),
                total == 0 ? Double.NaN : nanos[total - 1] / 1e6, json(firstError), handshakes,
                openssl ? resumed : -1, responseBytes, cpuSeconds,
                total == 0 ? "null" : String.format(Locale.ROOT, "%.1f", cpuSeconds * 1e6 / total),
                openssl ? "openssl (" + OpenSsl.versionString() + ")" : "jdk", transport.name(),
                mode.name().toLowerCase(Locale.ROOT), connections, pipeline);
    }

    /**
     * One worker: one connection at a time, reopened when it closes, until the end of the run. Every field
     * is touched only on {@link #loop}.
     */
    private final class Worker {
        final EventLoop loop;
        long[] nanos = new long[1024];
        int count;
        long completed;
        long errors;
        long handshakes;
        long resumed;
        long responseBytes;
        String firstError;
        boolean done;

        Worker(EventLoop loop) {
            this.loop = loop;
        }

        void open() {
            if (System.nanoTime() >= end) {
                finish();
                return;
            }
            Exchange exchange = new Exchange(this, System.nanoTime());
            Bootstrap bootstrap = new Bootstrap().group(loop).channel(transport.socketChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 15_000)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (proxy != null) {
                                ch.pipeline().addLast("connect", new ConnectHead(exchange));
                            } else {
                                exchange.startTls(ch);
                            }
                        }
                    });
            ChannelFuture connected = bootstrap.connect(proxy != null ? proxy : direct);
            connected.addListener(f -> {
                if (!f.isSuccess()) {
                    exchange.fail(f.cause());
                }
            });
            connected.channel().closeFuture().addListener(f -> closed(exchange));
        }

        void closed(Exchange exchange) {
            long now = System.nanoTime();
            if (!exchange.ended && !exchange.failed && now < end) {
                error(new IOException("connection closed with " + exchange.inflight.size() + " request(s) in flight"));
            }
            if (now >= end) {
                finish();
            } else if (exchange.failed) {
                loop.schedule(this::open, 10, TimeUnit.MILLISECONDS);
            } else {
                open();
            }
        }

        void record(long t0, long t1) {
            completed++;
            if (t0 >= measureFrom && t1 <= end) {
                if (count == nanos.length) {
                    nanos = Arrays.copyOf(nanos, count * 2);
                }
                nanos[count++] = t1 - t0;
            }
        }

        void error(Throwable cause) {
            if (System.nanoTime() < end) {
                errors++;
                if (firstError == null) {
                    firstError = cause.toString();
                }
            }
        }

        void finish() {
            if (!done) {
                done = true;
                finished.countDown();
            }
        }
    }

    /** Sends the CONNECT, waits for the proxy's 200 head, then hands the channel to TLS. */
    private final class ConnectHead extends ChannelInboundHandlerAdapter {
        private final Exchange exchange;
        private ByteBuf head;

        ConnectHead(Exchange exchange) {
            this.exchange = exchange;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.writeAndFlush(Unpooled.wrappedBuffer(connect));
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws IOException {
            ByteBuf in = (ByteBuf) msg;
            if (head == null) {
                head = ctx.alloc().heapBuffer(256);
            }
            head.writeBytes(in);
            in.release();
            int endOfHead = -1;
            for (int i = head.readerIndex(); i + 3 < head.writerIndex(); i++) {
                if (head.getInt(i) == 0x0d0a0d0a) {
                    endOfHead = i + 4;
                    break;
                }
            }
            if (endOfHead < 0) {
                if (head.readableBytes() > 16384) {
                    throw new IOException("CONNECT answer head longer than 16 KiB");
                }
                return;
            }
            String text = head.toString(head.readerIndex(), endOfHead - head.readerIndex(), StandardCharsets.US_ASCII);
            String status = text.substring(0, text.indexOf('\r'));
            String[] parts = status.split(" ", 3);
            if (parts.length < 2 || !parts[1].equals("200")) {
                throw new IOException("CONNECT answered: " + status);
            }
            head.readerIndex(endOfHead);
            ByteBuf rest = head;
            head = null;
            Channel ch = ctx.channel();
            ctx.pipeline().remove(this);
            exchange.startTls(ch);
            if (rest.isReadable()) {
                ch.pipeline().fireChannelRead(rest);
            } else {
                rest.release();
            }
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            if (head != null) {
                head.release();
                head = null;
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            exchange.fail(cause);
            ctx.close();
        }
    }

    /** One connection's TLS session and its requests: sends, reads answers, times them. */
    private final class Exchange extends ChannelInboundHandlerAdapter {
        final Worker worker;
        final long started;
        final ArrayDeque<Long> inflight = new ArrayDeque<>();
        boolean ended;
        boolean failed;
        boolean serverCloses;
        long bodyBytes;
        ChannelHandlerContext ctx;

        Exchange(Worker worker, long started) {
            this.worker = worker;
            this.started = started;
        }

        void startTls(Channel ch) {
            SslHandler ssl = tls.newHandler(ch.alloc(), host, port);
            ssl.setHandshakeTimeoutMillis(15_000);
            ch.pipeline().addLast("tls", ssl).addLast("http", new HttpResponseDecoder()).addLast("client", this);
            ssl.handshakeFuture().addListener(f -> {
                if (!f.isSuccess()) {
                    fail(f.cause());
                    ch.close();
                    return;
                }
                worker.handshakes++;
                SSLEngine engine = ssl.engine();
                if (engine instanceof ReferenceCountedOpenSslEngine openssl) {
                    if (SSL.isSessionReused(openssl.sslPointer())) {
                        worker.resumed++;
                    }
                }
                for (int i = 0; i < pipeline; i++) {
                    send(false);
                }
                ch.flush();
            });
        }

        private void send(boolean flush) {
            inflight.add(System.nanoTime());
            if (flush) {
                ctx.writeAndFlush(request.duplicate());
            } else {
                ctx.write(request.duplicate());
            }
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws IOException {
            HttpObject http = (HttpObject) msg;
            try {
                if (http.decoderResult().isFailure()) {
                    throw new IOException("unreadable answer", http.decoderResult().cause());
                }
                if (http instanceof HttpResponse response) {
                    if (response.status().code() != 200) {
                        throw new IOException("status " + response.status());
                    }
                    serverCloses = !HttpUtil.isKeepAlive(response);
                    bodyBytes = 0;
                }
                if (http instanceof HttpContent content) {
                    bodyBytes += content.content().readableBytes();
                }
                if (http instanceof LastHttpContent) {
                    answered(ctx);
                }
            } finally {
                io.netty.util.ReferenceCountUtil.release(msg);
            }
        }

        private void answered(ChannelHandlerContext ctx) throws IOException {
            long t1 = System.nanoTime();
            Long sent = inflight.poll();
            if (sent == null) {
                throw new IOException("an answer without a request");
            }
            worker.record(mode == Mode.NEW ? started : sent, t1);
            worker.responseBytes = bodyBytes;
            if (mode == Mode.NEW || serverCloses || t1 >= end) {
                if (inflight.isEmpty()) {
                    ended = true;
                    ctx.close();
                }
                return;
            }
            send(true);
        }

        void fail(Throwable cause) {
            if (!failed && !ended) {
                failed = true;
                worker.error(cause);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            fail(cause);
            ctx.close();
        }
    }

    private static String json(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ")
                .replace("\r", " ") + "\"";
    }

    private static double quantile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }

    private static long processCpuNanos() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getProcessCpuTime();
        }
        return 0;
    }

    private static void sleepUntil(long nanoTime) throws InterruptedException {
        long left;
        while ((left = nanoTime - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }
}
