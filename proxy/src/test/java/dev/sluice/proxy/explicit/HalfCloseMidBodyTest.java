package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import dev.sluice.proxy.testing.WatchingOrigin;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A client that half-closes (FIN, or TLS close_notify inside an intercepted tunnel) while its request
 * body is still expected ends its exchange at once (issue 23), over real sockets: the client reads
 * nothing more and sees the connection close, the origin sees its connection closed
 * and never a complete request, the one record of the exchange says {@code client_closed_mid_body}
 * with the bytes sent so far, and the connection slot is free again — Sluice runs at
 * {@code max_connections_per_extension: 1}, so every scenario ends by serving a new connection. A
 * FIN after a complete request still gets the whole answer.
 *
 * <p>No timing window: the refusal linger of the proxy this class starts ({@link #TEST_LINGER}) is far beyond
 * {@link #HANG_GUARD}, so a close that arrives at all came from the half-close (or the request's end),
 * never from the linger running out; {@link #HANG_GUARD} only stops a test that would hang.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HalfCloseMidBodyTest {

    private static final String HOST = "api.llm.test";
    private static final int BODY_BYTES = 100;
    /** Only catches a hang: far shorter than {@link #TEST_LINGER}, far longer than any real close. */
    private static final Duration HANG_GUARD = Duration.ofSeconds(10);
    /** The refusal linger while this class runs: a close within {@link #HANG_GUARD} cannot be the linger's. */
    private static final Duration TEST_LINGER = Duration.ofMinutes(10);

    @TempDir
    static Path dir;
    private WatchingOrigin origin;
    private WatchingOrigin tlsOrigin;
    private int deadPort;
    private SluiceFixture sluice;
    private final HttpClient admin = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        origin = new WatchingOrigin();
        tlsOrigin = new WatchingOrigin(TestTls.create(dir.resolve("origin-tls"), HOST));
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            deadPort = s.getLocalPort();
        }
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%1$d]
                      - host: dead.test
                        ports: [%2$d]
                      - host: %3$s
                        ports: [%4$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                    dead.test: 127.0.0.1
                    %3$s: 127.0.0.1
                inspect:
                  %3$s: { redact: true }
                tls:
                  extra_trust: ["%5$s"]
                limits:
                  max_connections_per_extension: 1
                  max_inspected_body: 1KiB
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                """.formatted(origin.port(), deadPort, HOST, tlsOrigin.port(),
                dir.resolve("origin-tls").resolve("ca.pem").toAbsolutePath()), TEST_LINGER);
    }

    @AfterAll
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
        tlsOrigin.close();
    }

    @BeforeEach
    void nothingOpen() {
        // A precondition, not the measure: the first scrape of the admin listener may be slow.
        await().atMost(Duration.ofSeconds(10)).until(() -> activeConnections() == 0);
    }

    // ---- scenarios --------------------------------------------------------------------------------

    /** What the client sends before its FIN: the framing header, and the part of the body it sends. */
    record Cut(String name, String framing, String partialBody, long dataBytes) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Arguments> cuts() {
        String data = "x".repeat(BODY_BYTES);
        String cl = "Content-Length: " + BODY_BYTES + "\r\n";
        String te = "Transfer-Encoding: chunked\r\n";
        return Stream.of(
                new Cut("cl-head-only", cl, "", 0),
                new Cut("cl-one-byte", cl, data.substring(0, 1), 1),
                new Cut("cl-half", cl, data.substring(0, 50), 50),
                new Cut("cl-one-short", cl, data.substring(0, 99), 99),
                new Cut("chunked-head-only", te, "", 0),
                new Cut("chunked-mid-size-line", te, "3", 0),
                new Cut("chunked-mid-data", te, "a\r\n01234", 5),
                new Cut("chunked-data-without-crlf", te, "a\r\n0123456789", 10),
                new Cut("chunked-after-a-chunk", te, "a\r\n0123456789\r\n", 10),
                new Cut("chunked-last-chunk-without-final-crlf", te, "a\r\n0123456789\r\n0\r\n", 10))
                .map(Arguments::of);
    }

    @ParameterizedTest(name = "plain {0}")
    @MethodSource("cuts")
    void plainFinMidBodyEndsTheExchangeAtOnce(Cut cut) throws Exception {
        String path = "/plain-" + cut.name();
        int before = origin.connections().size();
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout((int) HANG_GUARD.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write(("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\nHost: origin.test\r\n"
                    + cut.framing() + "\r\n" + cut.partialBody()).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            WatchingOrigin.Connection upstream = awaitUpstream(origin, before, path, cut.dataBytes());

            socket.shutdownOutput();
            assertClosedPromptlyWithNothingMore(socket.getInputStream());
            await().atMost(HANG_GUARD).until(upstream::closed);
            assertThat(upstream.completed()).doesNotContain(path);

            JsonNode record = onlyRecord(path);
            assertThat(record.path("error").asText()).isEqualTo("client_closed_mid_body");
            assertThat(record.path("bytes.sent").asLong()).isEqualTo(upstream.rawBytes());
            assertThat(record.has("http.response.status_code")).isFalse();
        }
        assertANewConnectionIsServed();
    }

    @ParameterizedTest(name = "intercepted {0}, {1}")
    @MethodSource("interceptedCuts")
    void interceptedHalfCloseMidBodyEndsTheExchangeAtOnce(Cut cut, String how) throws Exception {
        String path = "/tls-" + cut.name() + "-" + how;
        int before = tlsOrigin.connections().size();
        try (Socket tunnel = connectTunnel()) {
            SSLSocket tls = tls(tunnel, !how.equals("close_notify"));
            OutputStream out = tls.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + tlsOrigin.port() + "\r\n"
                    + "Content-Type: application/json\r\n" + cut.framing() + "\r\n" + cut.partialBody())
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // A body within limits.max_buffered_body is held whole before anything of the request goes
            // upstream: the origin has only the TLS connection the CONNECT dialled.
            WatchingOrigin.Connection upstream = await().atMost(Duration.ofSeconds(10))
                    .until(() -> tlsOrigin.connections().size() > before ? tlsOrigin.connections().get(before) : null,
                            c -> c != null);

            if (how.equals("fin")) {
                tunnel.shutdownOutput(); // TCP FIN inside the tunnel, no close_notify
            } else {
                tls.shutdownOutput(); // TLS close_notify only, no FIN
            }
            assertClosedPromptlyWithNothingMore(tls.getInputStream());
            await().atMost(HANG_GUARD).until(upstream::closed);
            assertThat(upstream.completed()).doesNotContain(path);

            assertThat(upstream.heads()).as("the held request never left").isEmpty();

            JsonNode record = onlyRecord(path);
            assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
            assertThat(record.path("error").asText()).isEqualTo("client_closed_mid_body");
        }
        assertANewConnectionIsServed();
    }

    static Stream<Arguments> interceptedCuts() {
        return cuts().map(a -> (Cut) a.get()[0])
                .filter(c -> List.of("cl-head-only", "cl-half", "chunked-mid-data", "chunked-data-without-crlf",
                        "chunked-last-chunk-without-final-crlf").contains(c.name()))
                .flatMap(c -> Stream.of(Arguments.of(c, "fin"), Arguments.of(c, "close_notify")));
    }

    @Test
    void aFinAfterACompleteRequestStillGetsTheWholeAnswer() throws Exception {
        for (String framing : List.of("cl", "chunked")) {
            String path = "/complete-" + framing;
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
                socket.setSoTimeout(10_000);
                String body = framing.equals("cl")
                        ? "Content-Length: 5\r\n\r\nhello"
                        : "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
                socket.getOutputStream().write(("POST http://origin.test:" + origin.port() + path
                        + " HTTP/1.1\r\nHost: origin.test\r\n" + body).getBytes(StandardCharsets.US_ASCII));
                socket.shutdownOutput();
                String answer = readAll(socket.getInputStream());
                assertThat(answer).startsWith("HTTP/1.1 200").endsWith("\r\n\r\nok 5");
            }
            assertThat(onlyRecord(path).path("http.response.status_code").asInt()).isEqualTo(200);
            assertThat(onlyRecord(path).has("error")).isFalse();
            awaitSlotFree();
        }
    }

    @Test
    void aPipelinedRequestCutByTheFinEndsOnceTheFirstIsAnswered() throws Exception {
        String first = "/pipelined-first";
        String second = "/pipelined-second";
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            String url = "http://origin.test:" + origin.port();
            socket.getOutputStream().write(("POST " + url + first + " HTTP/1.1\r\nHost: origin.test\r\n"
                    + "Content-Length: 5\r\n\r\nhello"
                    + "POST " + url + second + " HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "a\r\n0123456789")
                    .getBytes(StandardCharsets.US_ASCII));
            socket.shutdownOutput();
            String answer = readAll(socket.getInputStream()); // the 10 s socket timeout only guards a hang
            assertThat(answer).startsWith("HTTP/1.1 200").endsWith("\r\n\r\nok 5");
        }
        assertThat(onlyRecord(first).path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(onlyRecord(second).path("error").asText()).isEqualTo("client_closed_mid_body");
        assertThat(origin.connections().stream().flatMap(c -> c.completed().stream())).doesNotContain(second);
        awaitSlotFree();
    }

    /**
     * Complete pipelined requests sent with their FIN in one write: every one is answered, in order, and
     * then the connection closes (on epoll the FIN is read with them while the first is in flight; it
     * must take effect only after the last).
     */
    @Test
    void completePipelinedRequestsBeforeAFinAreAllAnsweredInOrderThenTheConnectionCloses() throws Exception {
        String url = "http://origin.test:" + origin.port();
        List<String> paths = List.of("/pipelined-a", "/pipelined-b", "/pipelined-c");
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("GET " + url + paths.get(0) + " HTTP/1.1\r\nHost: origin.test\r\n\r\n"
                    + "POST " + url + paths.get(1) + " HTTP/1.1\r\nHost: origin.test\r\nContent-Length: 3\r\n\r\nabc"
                    + "POST " + url + paths.get(2) + " HTTP/1.1\r\nHost: origin.test\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            socket.shutdownOutput();
            String answer = readAll(socket.getInputStream()); // the 10 s socket timeout only guards a hang
            assertThat(answer.split("HTTP/1\\.1 200", -1)).hasSize(4);
            assertThat(answer.indexOf("ok 0")).isLessThan(answer.indexOf("ok 3"));
            assertThat(answer.indexOf("ok 3")).isLessThan(answer.indexOf("ok 5"));
            assertThat(answer).endsWith("\r\n\r\nok 5");
        }
        for (String path : paths) {
            assertThat(onlyRecord(path).path("http.response.status_code").asInt()).isEqualTo(200);
            assertThat(onlyRecord(path).has("error")).isFalse();
        }
        awaitSlotFree();
    }

    @Test
    void aFinAfterACompleteInterceptedRequestStillGetsTheWholeAnswer() throws Exception {
        String path = "/tls-complete";
        try (Socket tunnel = connectTunnel()) {
            SSLSocket tls = tls(tunnel);
            tls.getOutputStream().write(("POST " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + tlsOrigin.port()
                    + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                    .getBytes(StandardCharsets.US_ASCII));
            tls.getOutputStream().flush();
            tunnel.shutdownOutput();
            String answer = readAll(tls.getInputStream());
            assertThat(answer).startsWith("HTTP/1.1 200").endsWith("\r\n\r\nok 2");
        }
        assertThat(onlyRecord(path).path("http.response.status_code").asInt()).isEqualTo(200);
        awaitSlotFree();
    }

    /** A chunked body whose framing breaks can never complete either: never ended upstream as if whole. */
    @Test
    void aBrokenChunkedBodyIsRefusedAndNeverEndedUpstream() throws Exception {
        String path = "/broken-chunk";
        int before = origin.connections().size();
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\nHost: origin.test\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            WatchingOrigin.Connection upstream = awaitUpstream(origin, before, path, 10);
            out.write("ZZ-not-a-size\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // The refusal may linger (the class sets the linger far past the hang guard), so read the
            // answer, then end the request side: the connection closes on the FIN.
            String answer = readUntil(socket.getInputStream(), "sluice: malformed_request");
            shutdownOutputQuietly(socket);
            try {
                answer += readAll(socket.getInputStream());
            } catch (java.net.SocketException e) {
                // closed with a reset after the answer: the answer is what this test reads
            }
            assertThat(answer).startsWith("HTTP/1.1 400").contains("sluice: malformed_request");
            await().atMost(HANG_GUARD).until(upstream::closed);
            assertThat(upstream.completed()).doesNotContain(path);
        }
        JsonNode record = onlyRecord(path);
        assertThat(record.path("reason").asText()).isEqualTo("malformed_request");
        assertThat(record.path("error").asText()).isEqualTo("malformed chunked request body");
        awaitSlotFree();
    }

    /** Refused while the body still arrives (lingering close): the FIN ends the linger at once. */
    @ParameterizedTest(name = "linger {0}")
    @MethodSource("cuts")
    void aFinDuringTheLingerOfARefusedRequestClosesAtOnce(Cut cut) throws Exception {
        if (cut.partialBody().isEmpty()) {
            return; // covered by the other cuts; nothing to linger over
        }
        for (String refusedBy : List.of("request-phase", "forwarder")) {
            String path = "/linger-" + refusedBy + "-" + cut.name();
            String target = refusedBy.equals("request-phase")
                    ? "http://denied.test" + path : "http://dead.test:" + deadPort + path;
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
                socket.setSoTimeout(10_000);
                OutputStream out = socket.getOutputStream();
                out.write(("POST " + target + " HTTP/1.1\r\nHost: x\r\n" + cut.framing() + "\r\n" + cut.partialBody())
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String head = readHead(socket.getInputStream());
                assertThat(head).matches("(?s)HTTP/1.1 (403|502) .*").containsIgnoringCase("connection: close");
                socket.setSoTimeout((int) HANG_GUARD.toMillis());
                socket.shutdownOutput();
                try {
                    assertClosedPromptly(socket.getInputStream());
                } catch (AssertionError e) {
                    throw new AssertionError(path + ": " + e.getMessage(), e);
                }
            }
            // The forwarder's 502 (a dead port) is an upstream failure, not a denial (docs/audit.md).
            assertThat(onlyRecord(path).path("decision").asText())
                    .isEqualTo(refusedBy.equals("request-phase") ? "deny" : "allow");
            if (refusedBy.equals("forwarder")) {
                assertThat(onlyRecord(path).path("outcome").asText()).isEqualTo("upstream_failure");
            }
            awaitSlotFree();
        }
    }

    @Test
    void aFinDuringTheLingerOfAnInterceptedRefusalClosesAtOnce() throws Exception {
        String path = "/tls-linger-too-large";
        try (Socket tunnel = connectTunnel()) {
            SSLSocket tls = tls(tunnel);
            // Over max_inspected_body (1 KiB): refused by the redaction phase before anything goes upstream.
            tls.getOutputStream().write(("POST " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + tlsOrigin.port()
                    + "\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"a\":")
                    .getBytes(StandardCharsets.US_ASCII));
            tls.getOutputStream().flush();
            String head = readHead(tls.getInputStream());
            assertThat(head).startsWith("HTTP/1.1 413");
            tunnel.shutdownOutput();
            assertClosedPromptly(tls.getInputStream());
        }
        assertThat(onlyRecord(path).path("reason").asText()).isEqualTo("body_too_large");
        awaitSlotFree();
    }

    // ---- helpers ----------------------------------------------------------------------------------

    /**
     * Waits until the origin read the request head on a new connection and {@code dataBytes} of body
     * (any amount when negative).
     */
    private static WatchingOrigin.Connection awaitUpstream(WatchingOrigin origin, int before, String path,
                                                           long dataBytes) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> {
            List<WatchingOrigin.Connection> all = origin.connections();
            for (int i = before; i < all.size(); i++) {
                WatchingOrigin.Connection c = all.get(i);
                if (c.heads().contains(path) && (dataBytes < 0 || c.bodyBytes() == dataBytes)) {
                    return c;
                }
            }
            return null;
        }, c -> c != null);
    }

    /**
     * The client reads end-of-stream, and no byte before it (the socket's timeout is {@link #HANG_GUARD},
     * far below the linger, so the close is the half-close's doing).
     */
    private static void assertClosedPromptlyWithNothingMore(InputStream in) throws IOException {
        int first = readWithin(in);
        assertThat(first).as("a byte after the half-close").isEqualTo(-1);
    }

    /** The client reads end-of-stream after whatever was still in flight (not the linger's close, see above). */
    private static void assertClosedPromptly(InputStream in) throws IOException {
        while (readWithin(in) >= 0) {
            // drain the rest of the refusal
        }
    }

    private static int readWithin(InputStream in) throws IOException {
        try {
            return in.read();
        } catch (SocketTimeoutException e) {
            throw new AssertionError("still open after " + HANG_GUARD.toMillis() + " ms (the linger is "
                    + TEST_LINGER.toMillis() + " ms, so nothing but the half-close could close it)", e);
        }
    }

    private JsonNode onlyRecord(String path) {
        await().atMost(Duration.ofSeconds(5)).until(() -> records(path).size() >= 1);
        List<JsonNode> records = records(path);
        assertThat(records).as("records of " + path).hasSize(1);
        return records.get(0);
    }

    private List<JsonNode> records(String path) {
        return sluice.audit().stream().filter(r -> path.equals(r.path("url.path").asText(null))).toList();
    }

    private Socket connectTunnel() throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port());
        socket.setSoTimeout((int) HANG_GUARD.toMillis());
        String target = HOST + ":" + tlsOrigin.port();
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(readHead(socket.getInputStream())).startsWith("HTTP/1.1 200");
        return socket;
    }

    private SSLSocket tls(Socket tunnel) throws Exception {
        return tls(tunnel, true);
    }

    /**
     * TLS over the tunnel. With {@code autoClose} false, {@link SSLSocket#shutdownOutput()} sends only
     * close_notify (the TCP connection stays open both ways); with true, it also sends a FIN.
     */
    private SSLSocket tls(Socket tunnel, boolean autoClose) throws Exception {
        SSLSocket tls = (SSLSocket) TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")).getSocketFactory()
                .createSocket(tunnel, HOST, tlsOrigin.port(), autoClose);
        tls.startHandshake();
        return tls;
    }

    /** Reads a response head (through its blank line, or to the end of the stream). */
    private static String readHead(InputStream in) throws IOException {
        return readUntil(in, "\r\n\r\n");
    }

    /** Reads until {@code marker} has arrived or the stream ends (the socket timeout guards a hang). */
    private static String readUntil(InputStream in, String marker) throws IOException {
        StringBuilder read = new StringBuilder();
        int b;
        while (read.indexOf(marker) < 0 && (b = in.read()) >= 0) {
            read.append((char) b);
        }
        return read.toString();
    }

    /** Half-closes the client side; a connection the proxy already closed may refuse it. */
    private static void shutdownOutputQuietly(Socket socket) {
        try {
            socket.shutdownOutput();
        } catch (IOException e) {
            // already closed by the proxy: nothing left to end
        }
    }

    private static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        in.transferTo(out);
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /**
     * Waits until no connection of the {@code default} extension is open: the gauge behind
     * {@code sluice_active_connections}, read in process (a scrape of /metrics over HTTP can itself take
     * longer than the second this measures when the machine is loaded). The scrape is checked once after.
     */
    private void awaitSlotFree() throws Exception {
        await().atMost(HANG_GUARD).pollInterval(Duration.ofMillis(10)).until(() ->
                sluice.server().metrics().activeConnections("default", "explicit").get() == 0);
        assertThat(activeConnections()).isZero();
    }

    private double activeConnections() throws Exception {
        String scrape = admin.send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + sluice.server().adminAddress().getPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        double total = 0;
        Matcher m = Pattern.compile("(?m)^sluice_active_connections\\{([^}]*)\\} (\\S+)$").matcher(scrape);
        while (m.find()) {
            if (m.group(1).contains("extension=\"default\"")) {
                total += Double.parseDouble(m.group(2));
            }
        }
        return total;
    }

    /** At the cap of one connection: the slot is freed, and a new connection is served. */
    private void assertANewConnectionIsServed() throws Exception {
        awaitSlotFree();
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("GET http://origin.test:" + origin.port() + "/next HTTP/1.1\r\n"
                    + "Host: origin.test\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            assertThat(readAll(socket.getInputStream())).startsWith("HTTP/1.1 200");
        }
    }
}
