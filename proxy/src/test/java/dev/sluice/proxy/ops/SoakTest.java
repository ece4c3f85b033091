package dev.sluice.proxy.ops;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.audit.AuditVerifier;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A soak with faults, short by default (12 s; {@code -Dsluice.soak.seconds=N} for a long one, e.g.
 * {@code mvn -B -pl proxy -am test -Dtest=SoakTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsluice.soak.seconds=600}): four clients loop over mixed traffic (plain HTTP, a denied request, a
 * malformed one, a blind CONNECT tunnel with TLS, an intercepted POST carrying a fake credential, a
 * request to an origin that resets mid-body, a chunked body that breaks, a name whose DNS server never
 * answers) while the policy is
 * rewritten and reloaded every 500 ms, alternately valid and broken. Afterwards: every request that
 * names a path has exactly one audit record, every kind has as many records as attempts, the hash
 * chain verifies, every client got a complete answer or a clean close (no hang), descriptors are back
 * at their baseline, and (LeakCheckExtension) no buffer leaked. The faults that need Sluice as its own
 * process — the audit disk filling up (a tmpfs), SIGHUP storms, RSS over time — are in the process-level
 * soak, {@code benchmarks/harness/soak.py} (CI runs it for 30 s).
 */
class SoakTest {

    static final int WORKERS = 4;
    static final int FD_SLACK = 4;

    enum Kind { PLAIN, DENIED, MALFORMED, BLIND, INTERCEPTED, RESET, BROKEN_CHUNKS, DNS_TIMEOUT }

    @TempDir
    static Path dir;
    private static RecordingOrigin plain;
    private static Origins tls;
    private static ServerSocket resetting;
    /** A DNS server that never answers: names outside network.hosts time out. */
    private static java.net.DatagramSocket silentDns;
    private static ExecutorService originThreads;
    private static SluiceFixture sluice;
    private static SSLContext trustSluice;
    private static String goodPolicy;

    @BeforeAll
    static void start() throws Exception {
        plain = new RecordingOrigin();
        tls = Origins.start(TestTls.create(dir.resolve("origin-tls"), "blind.test", "inspected.test"));
        tls.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("soak ok")));
        resetting = new ServerSocket(0, 100, InetAddress.getLoopbackAddress());
        silentDns = new java.net.DatagramSocket(0, InetAddress.getLoopbackAddress());
        originThreads = Executors.newCachedThreadPool();
        originThreads.submit(() -> {
            while (!resetting.isClosed()) {
                Socket s;
                try {
                    s = resetting.accept();
                } catch (IOException e) {
                    return null;
                }
                originThreads.submit(() -> resetMidBody(s));
            }
            return null;
        });
        goodPolicy = """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: plain.test
                        ports: [%1$d]
                      - host: reset.test
                        ports: [%2$d]
                      - host: blind.test
                        ports: [%3$d]
                      - host: inspected.test
                        ports: [%3$d]
                      - host: slow-dns.test
                        ports: [80]
                network:
                  allow_private: ["127.0.0.1/32"]
                  resolvers: ["127.0.0.1:%5$d"]
                  hosts:
                    plain.test: 127.0.0.1
                    reset.test: 127.0.0.1
                    blind.test: 127.0.0.1
                    inspected.test: 127.0.0.1
                inspect:
                  inspected.test: { redact: true }
                tls:
                  extra_trust: ["%4$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(plain.port(), resetting.getLocalPort(), tls.httpsPort(), tls.caPem().toAbsolutePath(),
                        silentDns.getLocalPort());
        sluice = SluiceFixture.start(goodPolicy);
        trustSluice = TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"));
    }

    /** Reads a request head, answers a head promising 100000 bytes and some of them, then resets. */
    private static Void resetMidBody(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            int last4 = 0;
            for (int b; last4 != 0x0d0a0d0a && (b = in.read()) >= 0; ) {
                last4 = (last4 << 8) | b;
            }
            OutputStream out = socket.getOutputStream();
            out.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(new byte[3000]);
            out.flush();
            socket.setSoLinger(true, 0);
        } catch (IOException e) {
            // Sluice went first
        }
        return null;
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        tls.close();
        plain.close();
        resetting.close();
        silentDns.close();
        originThreads.shutdownNow();
    }

    @Test
    void mixedLoadWithFaultsLeavesOneRecordPerRequestAVerifiedChainAndNoResidue() throws Exception {
        double seconds = Double.parseDouble(System.getProperty("sluice.soak.seconds", "12"));
        // Warm-up and baseline.
        Map<Kind, AtomicInteger> warm = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> paths = new ConcurrentLinkedQueue<>();
        for (Kind kind : Kind.values()) {
            once(kind, "warm", 0, warm, paths);
        }
        awaitQuiet();
        long fdBaseline = openDescriptors();

        Map<Kind, AtomicInteger> attempts = new ConcurrentHashMap<>();
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        ExecutorService clients = Executors.newFixedThreadPool(WORKERS + 1);
        List<Future<?>> running = new ArrayList<>();
        AtomicInteger reloads = new AtomicInteger();
        running.add(clients.submit(() -> {
            // Fault: policy rewritten every 500 ms, alternately valid and broken (a broken one never replaces
            // the running policy).
            boolean broken = false;
            while (System.nanoTime() < end) {
                sluice.writePolicy(broken ? goodPolicy.replace("allow:", "alow:") : goodPolicy);
                sluice.reloader().reload();
                reloads.incrementAndGet();
                broken = !broken;
                Thread.sleep(500); // the fault's period, not a wait for a condition
            }
            sluice.writePolicy(goodPolicy);
            sluice.reloader().reload();
            return null;
        }));
        for (int w = 0; w < WORKERS; w++) {
            int worker = w;
            running.add(clients.submit(() -> {
                Random random = new Random(worker);
                int n = 0;
                while (System.nanoTime() < end) {
                    // A DNS timeout holds its client for the query timeout (5 s): one request in 200.
                    Kind kind = random.nextInt(200) == 0 ? Kind.DNS_TIMEOUT
                            : Kind.values()[random.nextInt(Kind.DNS_TIMEOUT.ordinal())];
                    try {
                        once(kind, "w" + worker, n++, attempts, paths);
                    } catch (Throwable t) {
                        failures.add(kind + ": " + t);
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : running) {
            f.get();
        }
        clients.shutdown();
        assertThat(failures).as("clients that did not get a complete answer or a clean close").isEmpty();
        assertThat(reloads.get()).isGreaterThan(1);
        awaitQuiet();

        // Every request that names a path has exactly one record.
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            Map<String, Long> byPath = new java.util.HashMap<>();
            for (JsonNode r : sluice.audit()) {
                String p = r.path("url.path").asText("");
                if (p.startsWith("/soak/")) {
                    byPath.merge(p, 1L, Long::sum);
                }
            }
            for (String p : paths) {
                assertThat(byPath.get(p)).as("records of %s", p).isEqualTo(1L);
            }
            assertThat(byPath.keySet()).containsExactlyInAnyOrderElementsOf(paths);
            // Kinds without a path: one record per attempt (the warm-up's included).
            List<JsonNode> all = sluice.audit();
            assertThat(all.stream().filter(r -> "blind.test".equals(r.path("server.address").asText())
                    && "tunnel".equals(r.path("tls.mode").asText()))).as("blind tunnel records")
                    .hasSize(attempts.get(Kind.BLIND).get() + 1);
            assertThat(all.stream().filter(r -> "malformed_request".equals(r.path("reason").asText())
                    && !r.has("url.path")))
                    .as("malformed request records").hasSize(attempts.get(Kind.MALFORMED).get() + 1);
            // The fake credential in each intercepted body was found and redacted.
            assertThat(all.stream().filter(r -> r.path("url.path").asText("").contains("/intercepted/")))
                    .allSatisfy(r -> assertThat(r.path("redactions").path("aws-access-key-id").asInt()).isEqualTo(1));
        });
        int total = attempts.values().stream().mapToInt(AtomicInteger::get).sum();
        System.out.printf("soak: %.0f s, %d requests %s, %d policy reloads%n", seconds, total, attempts, reloads.get());

        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(openDescriptors())
                .as("open descriptors (baseline %d)", fdBaseline).isLessThanOrEqualTo(fdBaseline + FD_SLACK));

        sluice.stop();
        List<Path> files;
        try (Stream<Path> s = Files.list(sluice.dataDir())) {
            files = s.filter(p -> p.getFileName().toString().startsWith("audit.jsonl")).sorted().toList();
        }
        AuditVerifier.Result verified = AuditVerifier.verify(files);
        assertThat(verified.ok()).as("audit chain: %s", verified.problems()).isTrue();
    }

    /** One request of {@code kind}; checks what the client saw. Records the paths that must have one record. */
    private static void once(Kind kind, String worker, int n, Map<Kind, AtomicInteger> attempts,
                             ConcurrentLinkedQueue<String> paths) throws Exception {
        attempts.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
        String path = "/soak/" + worker + "/" + kind.name().toLowerCase() + "/" + n;
        switch (kind) {
            case PLAIN -> {
                paths.add(path);
                String answer = exchange("GET http://plain.test:" + plain.port() + path
                        + " HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n");
                assertThat(answer).startsWith("HTTP/1.1 200").contains("\r\n\r\nok 0 ");
            }
            case DENIED -> {
                paths.add(path);
                assertThat(exchange("GET http://denied.test" + path + " HTTP/1.1\r\nHost: denied.test\r\n"
                        + "Connection: close\r\n\r\n")).startsWith("HTTP/1.1 403").endsWith("sluice: not_allowlisted\n");
            }
            case MALFORMED -> assertThat(exchange("GET\u0001 nonsense\r\n\r\n")).startsWith("HTTP/1.1 400");
            case BROKEN_CHUNKS -> {
                paths.add(path);
                assertThat(exchange("POST http://plain.test:" + plain.port() + path + " HTTP/1.1\r\nHost: plain.test\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n-1\r\n\r\n"))
                        .startsWith("HTTP/1.1 400").endsWith("sluice: malformed_request\n");
            }
            case RESET -> {
                paths.add(path);
                // The origin resets mid-body: the client sees the head and part of the body, then a close.
                String answer = exchange("GET http://reset.test:" + resetting.getLocalPort() + path
                        + " HTTP/1.1\r\nHost: reset.test\r\n\r\n");
                assertThat(answer).matches("(?s)HTTP/1.1 (200|502) .*");
                if (answer.startsWith("HTTP/1.1 200")) {
                    assertThat(answer.length() - answer.indexOf("\r\n\r\n") - 4).isLessThan(100_000);
                }
            }
            case BLIND -> {
                try (Socket tunnel = connect("blind.test:" + tls.httpsPort())) {
                    SSLSocket s = (SSLSocket) tls.tls().clientContext().getSocketFactory().createSocket(tunnel,
                            "blind.test", tls.httpsPort(), true);
                    assertThat(request(s, "GET " + path + " HTTP/1.1\r\nHost: blind.test\r\nConnection: close\r\n\r\n"))
                            .startsWith("HTTP/1.1 200").contains("soak ok");
                }
            }
            case INTERCEPTED -> {
                paths.add(path);
                String key = "AKIA" + base32(new Random(n), 16);
                String body = "{\"note\":\"key " + key + "\"}";
                try (Socket tunnel = connect("inspected.test:" + tls.httpsPort())) {
                    SSLSocket s = (SSLSocket) trustSluice.getSocketFactory().createSocket(tunnel, "inspected.test",
                            tls.httpsPort(), true);
                    assertThat(request(s, "POST " + path + " HTTP/1.1\r\nHost: inspected.test:" + tls.httpsPort()
                            + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length()
                            + "\r\nConnection: close\r\n\r\n" + body)).startsWith("HTTP/1.1 200").contains("soak ok");
                }
            }
            case DNS_TIMEOUT -> {
                paths.add(path);
                // The resolver never answers: a clean 502/504 after the DNS query timeout, never a hang.
                assertThat(exchange("GET http://slow-dns.test" + path + " HTTP/1.1\r\nHost: slow-dns.test\r\n"
                        + "Connection: close\r\n\r\n")).matches("(?s)HTTP/1.1 50[24] .*sluice: (dns_failure|upstream_timeout)\n");
            }
            default -> throw new IllegalStateException("kind: " + kind);
        }
    }

    private static String base32(Random random, int n) {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return b.toString();
    }

    /** Sends {@code request} on a new connection and reads until Sluice closes it (10 s at most). */
    private static String exchange(String request) throws IOException {
        try (Socket s = new Socket(sluice.address().getAddress(), sluice.port())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return readToEnd(s.getInputStream());
        }
    }

    private static String request(SSLSocket s, String request) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        String answer = readToEnd(s.getInputStream());
        s.close();
        return answer;
    }

    private static String readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        try {
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (java.net.SocketException e) {
            // a reset after the answer: the client has what it got
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    private static Socket connect(String target) throws IOException {
        Socket socket = new Socket(sluice.address().getAddress(), sluice.port());
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed before the CONNECT answer: " + head);
            }
            head.append((char) b);
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 200");
        return socket;
    }

    private static void awaitQuiet() {
        await().atMost(Duration.ofSeconds(30)).until(() -> sluice.server().openDownstreamConnections() == 0
                && plain.closedConnections() == plain.connections());
    }

    private static long openDescriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
