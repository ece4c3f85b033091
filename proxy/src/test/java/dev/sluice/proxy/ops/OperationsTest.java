package dev.sluice.proxy.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Operating Sluice: metrics, admin endpoints, limits and timeouts, graceful shutdown. */
class OperationsTest {

    private ServerSocket origin;
    private ExecutorService threads;
    private SluiceFixture sluice;

    /** A raw origin: echoes what it reads (so a tunnel can be held open and measured). */
    @BeforeEach
    void startOrigin() throws IOException {
        origin = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads = Executors.newCachedThreadPool();
        threads.submit(() -> {
            while (!origin.isClosed()) {
                Socket s;
                try {
                    s = origin.accept();
                } catch (IOException e) {
                    return null;
                }
                threads.submit(() -> {
                    try (s) {
                        s.getInputStream().transferTo(s.getOutputStream());
                    }
                    return null;
                });
            }
            return null;
        });
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
        threads.shutdownNow();
    }

    private String policy(String limits) {
        return """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: echo.test
                        ports: [%1$d]
                  other:
                    auth: { token_sha256: "%2$s" }
                    allow:
                      - host: echo.test
                        ports: [%1$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    echo.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                limits:
                %3$s
                """.formatted(origin.getLocalPort(),
                // sha256("other-token")
                sha("other-token"), limits);
    }

    private static String sha(String s) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Socket tunnel(String authorization) throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port());
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("CONNECT echo.test:" + origin.getLocalPort() + " HTTP/1.1\r\nHost: echo.test\r\n"
                + (authorization == null ? "" : "Proxy-Authorization: " + authorization + "\r\n") + "\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        return socket;
    }

    private static String head(Socket socket) throws IOException {
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.append((char) b);
        }
        return head.toString();
    }

    private String admin(String path) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + sluice.server().adminAddress().getPort() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
        return response.statusCode() + " " + response.body();
    }

    private static double metric(String scrape, String name, String labelFragment) {
        double total = 0;
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{([^}]*)\\} (\\S+)$").matcher(scrape);
        while (m.find()) {
            if (m.group(1).contains(labelFragment)) {
                total += Double.parseDouble(m.group(2));
            }
        }
        return total;
    }

    @Test
    void metricsShowAnOpenTunnelsBytesBeforeItCloses() throws Exception {
        sluice = SluiceFixture.start(policy("  max_header_bytes: 32768"));
        try (Socket socket = tunnel(null)) {
            assertThat(head(socket)).startsWith("HTTP/1.1 200");
            byte[] payload = new byte[200_000];
            socket.getOutputStream().write(payload);
            assertThat(socket.getInputStream().readNBytes(payload.length)).hasSize(payload.length);
            String scrape = admin("/metrics");
            assertThat(scrape).startsWith("200 ");
            assertThat(metric(scrape, "sluice_egress_bytes_total", "destination=\"echo.test\""))
                    .isGreaterThanOrEqualTo(payload.length);
            assertThat(metric(scrape, "sluice_ingress_bytes_total", "extension=\"default\""))
                    .isGreaterThanOrEqualTo(payload.length);
            assertThat(metric(scrape, "sluice_active_connections", "extension=\"default\"")).isEqualTo(1.0);
        }
        await().atMost(Duration.ofSeconds(10)).until(() ->
                metric(admin("/metrics"), "sluice_requests_total", "decision=\"allow\"") >= 1.0);
    }

    @Test
    void aThousandDeniedHostsDoNotMakeAThousandSeries() throws Exception {
        sluice = SluiceFixture.start(policy("  max_header_bytes: 32768"));
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            for (int i = 0; i < 1000; i++) {
                raw.send("GET http://denied-" + i + ".test/ HTTP/1.1\r\nHost: denied-" + i + ".test\r\n\r\n");
                assertThat(raw.read().status()).isEqualTo(403);
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().size() == 1000);
        String scrape = admin("/metrics");
        long series = scrape.lines().filter(l -> l.startsWith("sluice_")).count();
        // the fixed series (about 100: every metric's constant ones) and no series per denied host
        assertThat(series).isLessThan(128);
        assertThat(scrape).doesNotContain("denied-999");
        assertThat(metric(scrape, "sluice_requests_total", "reason=\"not_allowlisted\"")).isEqualTo(1000.0);
    }

    @Test
    void adminEndpointsAnswerAndTheAdminPortIsNotReachableThroughTheProxy() throws Exception {
        sluice = SluiceFixture.start(policy("  max_header_bytes: 32768").replace("""
                      - host: echo.test
                        ports: [%d]
                  other:""".formatted(origin.getLocalPort()), """
                      - host: echo.test
                        ports: [%d]
                      - cidr: 127.0.0.1/32
                        ports: [80]
                  other:""".formatted(origin.getLocalPort())));
        assertThat(admin("/healthz")).isEqualTo("200 ok\n");
        assertThat(admin("/readyz")).isEqualTo("200 ready\n");
        JsonNode policy = new ObjectMapper().readTree(admin("/policy").substring(4));
        assertThat(policy.path("sha256").asText()).isEqualTo(sluice.server().policies().current().sha256Hex());
        assertThat(admin("/nope")).startsWith("404");
        // The proxy listener never serves admin paths...
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            assertThat(raw.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").read().status()).isEqualTo(400);
        }
        // ...and a request through the proxy to the admin address is a loop.
        int adminPort = sluice.server().adminAddress().getPort();
        var result = Curl.run(List.of("-x", sluice.proxyUrl(), "http://127.0.0.1:" + adminPort + "/metrics"));
        assertThat(result.httpStatus()).isEqualTo(403);
    }

    @Test
    void aTricklingClientIsClosedAfterTheHeaderTimeout() throws Exception {
        sluice = SluiceFixture.start(policy("  header_timeout: 1s"));
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            // A client trickling one byte per 100 ms (the pace is the client's behaviour under test, not a
            // wait): its header block would take about 7 s, far past header_timeout.
            String trickle = "GET http://echo.test/ HTTP/1.1\r\nHost: echo.test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaa";
            AtomicInteger sent = new AtomicInteger();
            ScheduledExecutorService client = Executors.newSingleThreadScheduledExecutor();
            long start = System.nanoTime();
            try {
                client.scheduleAtFixedRate(() -> {
                    int i = sent.get();
                    if (i >= trickle.length()) {
                        throw new IllegalStateException("head complete"); // stops the trickle
                    }
                    try {
                        out.write(trickle.charAt(i));
                        out.flush();
                        sent.incrementAndGet();
                    } catch (IOException e) {
                        throw new IllegalStateException("closed under the trickling client", e);
                    }
                }, 0, 100, TimeUnit.MILLISECONDS);
                // The condition: the proxy closes the connection (end of stream or a reset); the socket's
                // 10 s timeout only guards a hang.
                try {
                    assertThat(socket.getInputStream().read()).isEqualTo(-1);
                } catch (SocketException e) {
                    // reset: closed with the trickle's bytes unread
                }
            } finally {
                client.shutdownNow();
            }
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            // Closed while the head was still incomplete, and not before the timeout (a lower bound only: a
            // loaded machine can only lengthen it).
            assertThat(sent.get()).isLessThan(trickle.length());
            assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(900));
        }
        JsonNode record = await().atMost(Duration.ofSeconds(5)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("reason").asText().equals("header_timeout")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("decision").asText()).isEqualTo("deny");
    }

    @Test
    void theConnectionCapAnswers503AndOtherExtensionsAreUnaffected() throws Exception {
        sluice = SluiceFixture.start(policy("  max_connections_per_extension: 2"));
        List<Socket> open = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Socket s = tunnel(null);
                assertThat(head(s)).startsWith("HTTP/1.1 200");
                open.add(s);
            }
            try (Socket third = tunnel(null)) {
                String head = head(third);
                assertThat(head).startsWith("HTTP/1.1 503");
                assertThat(head).contains("connection_limit");
            }
            String basic = "Basic " + java.util.Base64.getEncoder().encodeToString(
                    "other:other-token".getBytes(StandardCharsets.US_ASCII));
            try (Socket other = tunnel(basic)) {
                assertThat(head(other)).startsWith("HTTP/1.1 200");
            }
            // Closing one frees a place.
            open.remove(0).close();
            await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
                try (Socket again = tunnel(null)) {
                    assertThat(head(again)).startsWith("HTTP/1.1 200");
                }
            });
        } finally {
            for (Socket s : open) {
                s.close();
            }
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .anyMatch(r -> r.path("reason").asText().equals("connection_limit")
                        && r.path("http.response.status_code").asInt() == 503));
    }

    /**
     * A client's FIN while reading is paused for backpressure, with the echo still flowing back: the
     * whole echo must arrive (regression for the epoll half-close registration loss described at
     * {@code KeptEpollRegistrations}), on whichever transport the run uses (epoll by default, or
     * {@code -Dsluice.transport=nio}). Repeated because the window is a race: 10 runs, or
     * {@code -Dsluice.halfclose.runs=N}.
     */
    @org.junit.jupiter.api.TestFactory
    java.util.stream.Stream<org.junit.jupiter.api.DynamicTest> halfCloseUnderBackpressureDeliversTheWholeEcho() {
        int runs = Integer.getInteger("sluice.halfclose.runs", 10);
        return java.util.stream.IntStream.rangeClosed(1, runs).mapToObj(i ->
                org.junit.jupiter.api.DynamicTest.dynamicTest("run " + i, this::halfCloseOnce));
    }

    private void halfCloseOnce() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        sluice = SluiceFixture.start(policy("  max_header_bytes: 32768"));
        long total = 48L << 20;
        ExecutorService client = Executors.newSingleThreadExecutor();
        try (Socket socket = tunnel(null)) {
            assertThat(head(socket)).startsWith("HTTP/1.1 200");
            Future<Long> echoed = client.submit(() -> {
                long n = 0;
                byte[] buf = new byte[65536];
                for (int r; (r = socket.getInputStream().read(buf)) > 0; ) {
                    n += r;
                }
                return n;
            });
            byte[] chunk = new byte[1 << 20];
            for (int i = 0; i < 48; i++) {
                socket.getOutputStream().write(chunk);
            }
            socket.shutdownOutput();
            assertThat(echoed.get()).isEqualTo(total);
        } finally {
            client.shutdownNow();
        }
    }

    @Test
    void theEgressBudgetAnswers429OnceSpentAndOnlyForThatExtension() throws Exception {
        sluice = SluiceFixture.start(policy("  egress_budget: 1MiB\n  egress_budget_window: 1h"));
        try (Socket socket = tunnel(null)) {
            assertThat(head(socket)).startsWith("HTTP/1.1 200");
            byte[] payload = new byte[2 << 20];
            socket.getOutputStream().write(payload);
            assertThat(socket.getInputStream().readNBytes(payload.length)).hasSize(payload.length);
        }
        try (Socket refused = tunnel(null)) {
            String head = head(refused);
            assertThat(head).startsWith("HTTP/1.1 429");
            assertThat(head).contains("egress_budget");
        }
        String basic = "Basic " + java.util.Base64.getEncoder().encodeToString(
                "other:other-token".getBytes(StandardCharsets.US_ASCII));
        try (Socket other = tunnel(basic)) {
            assertThat(head(other)).startsWith("HTTP/1.1 200");
        }
        // The record is written on the audit writer thread: wait for it rather than read too early.
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .anyMatch(r -> r.path("reason").asText().equals("egress_budget")
                        && r.path("http.response.status_code").asInt() == 429));
    }

    @Test
    void gracefulShutdownLetsA50MegabyteTransferFinishAndWritesItsRecord() throws Exception {
        sluice = SluiceFixture.start(policy("  max_header_bytes: 32768"));
        long total = 50L * 1024 * 1024;
        ExecutorService client = Executors.newSingleThreadExecutor();
        try (Socket socket = tunnel(null)) {
            assertThat(head(socket)).startsWith("HTTP/1.1 200");
            Future<Long> echoed = client.submit(() -> {
                long n = 0;
                InputStream in = socket.getInputStream();
                byte[] buf = new byte[65536];
                for (int r; (r = in.read(buf)) > 0; ) {
                    n += r;
                }
                return n;
            });
            OutputStream out = socket.getOutputStream();
            byte[] chunk = new byte[1 << 20];
            for (int i = 0; i < 10; i++) {
                out.write(chunk);
            }
            // Shut down while 40 MB are still to come; the deadline is generous.
            Thread stopper = new Thread(() -> sluice.stop(Duration.ofSeconds(20)));
            stopper.start();
            for (int i = 10; i < 50; i++) {
                out.write(chunk);
            }
            socket.shutdownOutput();
            assertThat(echoed.get()).isEqualTo(total);
            stopper.join(30_000);
        } finally {
            client.shutdownNow();
        }
        List<JsonNode> records = sluice.audit();
        assertThat(records).anyMatch(r -> r.path("tls.mode").asText().equals("tunnel")
                && r.path("bytes.sent").asLong() == total && r.path("bytes.received").asLong() == total);
    }
}
