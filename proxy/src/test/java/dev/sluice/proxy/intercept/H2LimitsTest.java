package dev.sluice.proxy.intercept;

import static dev.sluice.proxy.intercept.H2InterceptionTest.HOST;
import static dev.sluice.proxy.intercept.H2InterceptionTest.connectTunnel;
import static dev.sluice.proxy.intercept.H2InterceptionTest.frame;
import static dev.sluice.proxy.intercept.H2InterceptionTest.h2Over;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.Http2Headers;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The HTTP/2 limits of {@link H2Interception} other than rapid reset (which {@link H2InterceptionTest}
 * covers), over real sockets: raw HTTP/2 frames written by the test through a CONNECT tunnel and TLS
 * with ALPN {@code h2} to Sluice, to a real TLS origin (the JDK's HTTPS server) that holds the answers
 * of {@code /ok/hold/*} until the test releases them, so streams stay open.
 */
class H2LimitsTest {

    @TempDir
    Path dir;
    private HttpsServer origin;
    private ExecutorService originThreads;
    private final CountDownLatch release = new CountDownLatch(1);
    private final Set<String> held = ConcurrentHashMap.newKeySet();
    private SluiceFixture sluice;

    @BeforeEach
    void start() throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(tls.keystore().toFile())) {
            keys.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, tls.keystorePassword().toCharArray());
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), null, null);
        origin = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        origin.setHttpsConfigurator(new HttpsConfigurator(context));
        originThreads = Executors.newFixedThreadPool(128);
        origin.setExecutor(originThreads);
        origin.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getPath();
            try (exchange) {
                exchange.getRequestBody().readAllBytes();
                if (path.startsWith("/ok/hold/")) {
                    held.add(path);
                    release.await(30, TimeUnit.SECONDS);
                }
                byte[] body = "done".getBytes(StandardCharsets.US_ASCII);
                exchange.sendResponseHeaders(200, body.length);
                exchange.getResponseBody().write(body);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException cut) {
                // Sluice closed the upstream connection (a cut stream): nothing to answer.
            }
        });
        origin.start();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                        paths: ["/ok/**"]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { redact: true, pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, port(), tls.caPem().toAbsolutePath()));
    }

    @AfterEach
    void stop() throws IOException {
        release.countDown();
        if (sluice != null) {
            sluice.close();
        }
        origin.stop(0);
        originThreads.shutdownNow();
    }

    private int port() {
        return origin.getAddress().getPort();
    }

    private List<JsonNode> records(Predicate<JsonNode> which) {
        return sluice.audit().stream().filter(which).toList();
    }

    private static Predicate<JsonNode> pathStarting(String prefix) {
        return r -> r.path("url.path").asText("").startsWith(prefix);
    }

    private static final Predicate<JsonNode> TUNNEL = r -> "CONNECT".equals(r.path("http.request.method").asText(null));

    /** The tunnel's record, once written (the tunnel has closed). */
    private JsonNode tunnelRecord() {
        await().atMost(Duration.ofSeconds(10)).until(() -> !records(TUNNEL).isEmpty());
        List<JsonNode> tunnels = records(TUNNEL);
        assertThat(tunnels).hasSize(1);
        return tunnels.get(0);
    }

    /** HPACK (RFC 7541) request block: :method (static index), :scheme https, :path and :authority literal. */
    private byte[] requestBlock(boolean post, String path) {
        byte[] authority = (HOST + ":" + port()).getBytes(StandardCharsets.US_ASCII);
        byte[] p = path.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer block = ByteBuffer.allocate(16 + p.length + authority.length);
        block.put((byte) (post ? 0x83 : 0x82)).put((byte) 0x87);
        block.put((byte) 0x04).put((byte) p.length).put(p);
        block.put((byte) 0x01).put((byte) authority.length).put(authority);
        return java.util.Arrays.copyOf(block.array(), block.position());
    }

    /** One frame read off the connection (RFC 9113 section 4.1). */
    private record Frame(int type, int flags, int stream, byte[] payload) {
        long errorCode() {
            return ByteBuffer.wrap(payload, type == 0x7 ? 4 : 0, 4).getInt() & 0xffffffffL;
        }
    }

    private static Frame read(DataInputStream in) throws IOException {
        int length = (in.readUnsignedByte() << 16) | in.readUnsignedShort();
        int type = in.readUnsignedByte();
        int flags = in.readUnsignedByte();
        int stream = in.readInt() & 0x7fffffff;
        return new Frame(type, flags, stream, in.readNBytes(length));
    }

    /** Writes the preface and an empty SETTINGS, reads the server's SETTINGS and acknowledges it. */
    private static void handshake(OutputStream out, DataInputStream in) throws IOException {
        out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.write(frame(0x4, 0, 0, new byte[0]));
        out.flush();
        Frame f;
        do {
            f = read(in);
        } while (!(f.type() == 0x4 && (f.flags() & 0x1) == 0));
        out.write(frame(0x4, 0x1, 0, new byte[0])); // SETTINGS ACK: the server's limits now apply
        out.flush();
    }

    /** Reads frames until a GOAWAY (returns it) or the end of the connection (returns null). */
    private static Frame untilGoAwayOrEnd(DataInputStream in) throws IOException {
        try {
            while (true) {
                Frame f = read(in);
                if (f.type() == 0x7) {
                    return f;
                }
            }
        } catch (EOFException end) {
            return null;
        }
    }

    @Test
    void the101stConcurrentStreamIsRefusedWithRstStreamRefusedStreamWhileTheFirst100AreServed() throws Exception {
        try (Socket tunnel = connectTunnel(sluice, port()); SSLSocket tls = h2Over(sluice, tunnel, port())) {
            OutputStream out = tls.getOutputStream();
            DataInputStream in = new DataInputStream(tls.getInputStream());
            handshake(out, in);
            for (int i = 0; i < H2Interception.MAX_CONCURRENT_STREAMS; i++) {
                out.write(frame(0x1, 0x5, 1 + 2 * i, requestBlock(false, "/ok/hold/" + i)));
            }
            out.flush();
            await().atMost(Duration.ofSeconds(30)).until(() -> held.size() == H2Interception.MAX_CONCURRENT_STREAMS);
            int extra = 1 + 2 * H2Interception.MAX_CONCURRENT_STREAMS;
            out.write(frame(0x1, 0x5, extra, requestBlock(false, "/ok/extra")));
            out.flush();
            Frame refused;
            do {
                refused = read(in);
            } while (refused.type() != 0x3);
            assertThat(refused.stream()).isEqualTo(extra);
            assertThat(refused.errorCode()).isEqualTo(0x7); // REFUSED_STREAM
            release.countDown();
            DefaultHttp2HeadersDecoder hpack = new DefaultHttp2HeadersDecoder(true);
            Map<Integer, String> status = new HashMap<>();
            Map<Integer, StringBuilder> bodies = new HashMap<>();
            int ended = 0;
            while (ended < H2Interception.MAX_CONCURRENT_STREAMS) {
                Frame f = read(in);
                assertThat(f.type()).as("no GOAWAY or RST_STREAM").isNotIn(0x3, 0x7);
                if (f.type() == 0x1) {
                    Http2Headers headers = hpack.decodeHeaders(f.stream(), Unpooled.wrappedBuffer(f.payload()));
                    status.put(f.stream(), String.valueOf(headers.status()));
                }
                if (f.type() == 0x0) {
                    bodies.computeIfAbsent(f.stream(), s -> new StringBuilder())
                            .append(new String(f.payload(), StandardCharsets.US_ASCII));
                }
                if ((f.type() == 0x0 || f.type() == 0x1) && (f.flags() & 0x1) != 0) {
                    ended++;
                }
            }
            assertThat(status).hasSize(H2Interception.MAX_CONCURRENT_STREAMS).doesNotContainKey(extra);
            assertThat(status.values()).containsOnly("200");
            assertThat(bodies.values()).extracting(StringBuilder::toString).containsOnly("done");
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> records(pathStarting("/ok/hold/")).size()
                == H2Interception.MAX_CONCURRENT_STREAMS);
        assertThat(records(pathStarting("/ok/hold/"))).allSatisfy(r ->
                assertThat(r.path("http.response.status_code").asInt()).isEqualTo(200));
        // The refused stream never became a request: no record of its own, no error on the tunnel.
        assertThat(records(pathStarting("/ok/extra"))).isEmpty();
        assertThat(held).doesNotContain("/ok/extra");
        assertThat(tunnelRecord().path("error").asText("")).doesNotContain("h2 connection error");
    }

    @Test
    void aContinuationFloodEndsTheConnectionWithGoawayAndOneErrorInTheTunnelRecord() throws Exception {
        Frame goAway;
        try (Socket tunnel = connectTunnel(sluice, port()); SSLSocket tls = h2Over(sluice, tunnel, port())) {
            OutputStream out = tls.getOutputStream();
            DataInputStream in = new DataInputStream(tls.getInputStream());
            handshake(out, in);
            byte[] block = requestBlock(false, "/ok/continued");
            out.write(frame(0x1, 0x1, 1, java.util.Arrays.copyOf(block, 1))); // HEADERS, END_STREAM, no END_HEADERS
            try {
                for (int i = 0; i < 100; i++) {
                    out.write(frame(0x9, 0, 1, new byte[0])); // empty CONTINUATION, no END_HEADERS
                }
                out.flush();
            } catch (SocketException closedWhileWriting) {
                // The server may close before every frame is written.
            }
            goAway = untilGoAwayOrEnd(in);
        }
        assertThat(goAway).as("GOAWAY").isNotNull();
        assertThat(goAway.errorCode()).isEqualTo(0xb); // ENHANCE_YOUR_CALM
        JsonNode tunnel = tunnelRecord();
        assertThat(tunnel.path("error").asText()).startsWith("h2 connection error ENHANCE_YOUR_CALM (GOAWAY)")
                .containsOnlyOnce("h2 connection error");
        // The header block never ended, so no stream was opened: no request, no stream record.
        assertThat(held).isEmpty();
        assertThat(records(pathStarting("/ok/"))).isEmpty();
    }

    @Test
    void emptyDataFramesInARowEndTheConnectionWithGoawayAndTheCutStreamWritesItsRecord() throws Exception {
        Frame goAway;
        try (Socket tunnel = connectTunnel(sluice, port()); SSLSocket tls = h2Over(sluice, tunnel, port())) {
            OutputStream out = tls.getOutputStream();
            DataInputStream in = new DataInputStream(tls.getInputStream());
            handshake(out, in);
            out.write(frame(0x1, 0x4, 1, requestBlock(true, "/ok/hold/empty"))); // HEADERS, END_HEADERS
            out.write(frame(0x0, 0, 1, "x".getBytes(StandardCharsets.US_ASCII)));
            out.flush();
            try {
                for (int i = 0; i <= H2Interception.MAX_EMPTY_DATA_FRAMES; i++) {
                    out.write(frame(0x0, 0, 1, new byte[0])); // empty DATA without END_STREAM
                }
                out.flush();
            } catch (SocketException closedWhileWriting) {
                // The server may close before every frame is written.
            }
            goAway = untilGoAwayOrEnd(in);
        }
        assertThat(goAway).as("GOAWAY").isNotNull();
        assertThat(goAway.errorCode()).isEqualTo(0xb); // ENHANCE_YOUR_CALM
        JsonNode tunnel = tunnelRecord();
        assertThat(tunnel.path("error").asText()).startsWith("h2 connection error ENHANCE_YOUR_CALM (GOAWAY)")
                .containsOnlyOnce("h2 connection error");
        await().atMost(Duration.ofSeconds(10)).until(() -> !records(pathStarting("/ok/hold/empty")).isEmpty());
        List<JsonNode> stream = records(pathStarting("/ok/hold/empty"));
        assertThat(stream).hasSize(1);
        assertThat(stream.get(0).path("error").asText()).isEqualTo("downstream closed before the request body ended");
        assertThat(stream.get(0).path("decision").asText()).isEqualTo("allow");
    }

    @Test
    void aPingFloodThatReadsNoAnswerEndsTheConnectionOnceTheControlFrameQueueIsFull() throws Exception {
        byte[] pings = new byte[17 * 4096];
        for (int i = 0; i < 4096; i++) {
            System.arraycopy(frame(0x6, 0, 0, new byte[8]), 0, pings, 17 * i, 17);
        }
        long written = 0;
        long start = System.nanoTime();
        String seen;
        // A small receive window on the client keeps the kernel from buffering megabytes of answers.
        try (Socket tunnel = connectTunnel(sluice, port(), 4096); SSLSocket tls = h2Over(sluice, tunnel, port())) {
            OutputStream out = tls.getOutputStream();
            DataInputStream in = new DataInputStream(tls.getInputStream());
            handshake(out, in);
            try {
                // Never read: the PING answers fill the socket buffers, then Netty's queue.
                while (written < 20_000_000L && (System.nanoTime() - start) < TimeUnit.SECONDS.toNanos(90)) {
                    out.write(pings);
                    written += 4096;
                }
                seen = "no end after " + written + " PINGs";
            } catch (SocketException closedWhileWriting) {
                seen = "write failed: " + closedWhileWriting.getMessage();
            }
            try {
                Frame goAway = untilGoAwayOrEnd(in);
                seen += goAway == null ? "; read: end of stream" : "; read: GOAWAY " + goAway.errorCode();
            } catch (SocketException reset) {
                seen += "; read failed: " + reset.getMessage();
            }
        }
        System.out.println("PING flood: " + written + " PINGs written in "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms; client saw: " + seen);
        // The GOAWAY is queued behind the answers the client never read: what it sees is its writes
        // failing once Sluice force-closes the connection (SslHandler's close_notify flush timeout).
        assertThat(seen).startsWith("write failed");
        JsonNode tunnel = tunnelRecord();
        assertThat(tunnel.path("error").asText()).startsWith("h2 connection error ENHANCE_YOUR_CALM (GOAWAY)")
                .contains("Maximum number 10000 of outstanding control frames reached")
                .containsOnlyOnce("h2 connection error");
    }

    @Test
    void aClientFinWithStreamsOpenClosesTheConnectionAndEachCutStreamWritesItsRecordWithAnError()
            throws Exception {
        List<Frame> after = new ArrayList<>();
        try (Socket tunnel = connectTunnel(sluice, port()); SSLSocket tls = h2Over(sluice, tunnel, port())) {
            OutputStream out = tls.getOutputStream();
            DataInputStream in = new DataInputStream(tls.getInputStream());
            handshake(out, in);
            for (int i = 0; i < 3; i++) {
                out.write(frame(0x1, 0x5, 1 + 2 * i, requestBlock(false, "/ok/hold/fin-" + i)));
            }
            out.flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> held.size() == 3);
            tunnel.shutdownOutput(); // TCP FIN under the TLS (no close_notify), as a client that exits
            try {
                while (true) {
                    after.add(read(in));
                }
            } catch (EOFException | SocketException end) {
                // the connection ended
            }
        }
        System.out.println("after FIN the client read: " + after.stream()
                .map(f -> "type " + f.type() + " stream " + f.stream()).toList());
        assertThat(after).as("no answer for a cut stream").noneMatch(f -> f.type() == 0x1 || f.type() == 0x0);
        await().atMost(Duration.ofSeconds(10)).until(() -> records(pathStarting("/ok/hold/fin-")).size() == 3);
        assertThat(records(pathStarting("/ok/hold/fin-"))).allSatisfy(r -> {
            assertThat(r.path("error").asText()).contains("downstream closed before the exchange ended");
            assertThat(r.path("decision").asText()).isEqualTo("allow");
        });
        JsonNode tunnel = tunnelRecord();
        assertThat(tunnel.path("error").asText("")).doesNotContain("h2 connection error");
        release.countDown();
        // No record more after the held answers come (and find their connections gone).
        assertThat(records(pathStarting("/ok/hold/fin-"))).hasSize(3);
    }
}
