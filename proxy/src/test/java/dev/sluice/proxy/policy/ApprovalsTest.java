package dev.sluice.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Approvals with the webhook backend over real sockets: a test webhook answers each question; curl goes
 * through Sluice. Each scope, a denial, a timeout, a CONNECT, and no question for an address-class
 * literal.
 */
class ApprovalsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private RecordingOrigin origin;
    private SluiceFixture sluice;
    private HttpServer webhook;
    /** The answers the webhook gives, in order; "sleep" holds the answer past the timeout. */
    private final BlockingQueue<String> answers = new LinkedBlockingQueue<>();
    private final List<JsonNode> questions = new CopyOnWriteArrayList<>();
    private final CountDownLatch release = new CountDownLatch(1);

    @TempDir
    Path work;

    @BeforeEach
    void start() throws Exception {
        origin = new RecordingOrigin();
        webhook = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        webhook.createContext("/approve", exchange -> {
            questions.add(JSON.readTree(exchange.getRequestBody().readAllBytes()));
            String answer;
            try {
                answer = answers.poll(5, TimeUnit.SECONDS);
                if ("sleep".equals(answer)) {
                    release.await(10, TimeUnit.SECONDS);
                    answer = "{\"decision\":\"allow\",\"scope\":\"once\",\"by\":\"late\"}";
                }
            } catch (InterruptedException e) {
                answer = null;
            }
            byte[] body = (answer == null ? "{}" : answer).getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        webhook.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        webhook.start();
        Path overlay = work.resolve("approved.yaml");
        Files.writeString(overlay, "");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: known.test
                        ports: [%d]
                include: ["%s"]
                approvals:
                  backend: http://127.0.0.1:%d/approve
                  timeout: 1s
                  scopes: [once, session, always]
                  overlay: "%s"
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    known.test: 127.0.0.1
                    once.test: 127.0.0.1
                    session.test: 127.0.0.1
                    always.test: 127.0.0.1
                    slow.test: 127.0.0.1
                    tunnel.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port(), overlay, webhook.getAddress().getPort(), overlay));
    }

    @AfterEach
    void stop() throws Exception {
        release.countDown();
        sluice.close();
        webhook.stop(0);
        origin.close();
    }

    private CurlResult get(String host, String path, String... extra) {
        List<String> args = new java.util.ArrayList<>(List.of("-x", sluice.proxyUrl()));
        args.addAll(List.of(extra));
        args.add("http://" + host + ":" + origin.port() + path);
        return Curl.run(args);
    }

    private JsonNode record(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText())).reduce((a, b) -> b).orElse(null), r -> r != null);
    }

    @Test
    void onceAllowsThatRequestAndTheNextIsAskedAgain() {
        answers.add("{\"decision\":\"allow\",\"scope\":\"once\",\"by\":\"alice\"}");
        assertThat(get("once.test", "/first").httpStatus()).isEqualTo(200);
        assertThat(origin.requests()).extracting(r -> r.uri()).contains("/first");
        JsonNode q = questions.get(0);
        assertThat(q.get("extension").asText()).isEqualTo("default");
        assertThat(q.get("host").asText()).isEqualTo("once.test");
        assertThat(q.get("port").asInt()).isEqualTo(origin.port());
        assertThat(q.get("method").asText()).isEqualTo("GET");
        assertThat(q.get("path").asText()).isEqualTo("/first");
        JsonNode r = record("/first");
        assertThat(r.get("approval").asText()).isEqualTo("granted");
        assertThat(r.get("approval.by").asText()).isEqualTo("alice");
        assertThat(r.get("approval.scope").asText()).isEqualTo("once");
        assertThat(r.get("rule").asText()).isEqualTo("approval.once");
        assertThat(r.get("decision").asText()).isEqualTo("allow");

        answers.add("{\"decision\":\"deny\",\"by\":\"bob\"}");
        CurlResult denied = get("once.test", "/second");
        assertThat(denied.httpStatus()).isEqualTo(403);
        assertThat(denied.body()).isEqualTo("sluice: not_allowlisted\n");
        assertThat(questions).hasSize(2);
        JsonNode d = record("/second");
        assertThat(d.get("approval").asText()).isEqualTo("denied");
        assertThat(d.get("approval.by").asText()).isEqualTo("bob");
        assertThat(d.get("decision").asText()).isEqualTo("deny");
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain("/second");
    }

    @Test
    void sessionAllowsTheHostUntilRestartWithoutAskingAgain() {
        answers.add("{\"decision\":\"allow\",\"scope\":\"session\",\"by\":\"alice\"}");
        assertThat(get("session.test", "/a").httpStatus()).isEqualTo(200);
        assertThat(get("session.test", "/b", "-X", "POST", "-d", "x=1").httpStatus()).isEqualTo(200);
        assertThat(questions).hasSize(1);
        assertThat(record("/b").get("approval.by").asText()).isEqualTo("session");
        assertThat(record("/b").get("approval.scope").asText()).isEqualTo("session");
    }

    @Test
    void alwaysWritesARuleIntoTheOverlayAndReloads() throws Exception {
        answers.add("{\"decision\":\"allow\",\"scope\":\"always\",\"by\":\"alice\"}");
        assertThat(get("always.test", "/pkg").httpStatus()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadsOk() == 1);
        String overlay = Files.readString(work.resolve("approved.yaml"));
        assertThat(JSON.readTree(overlay).at("/extensions/default/allow/0").toString())
                .isEqualTo("{\"host\":\"always.test\",\"ports\":[" + origin.port() + "],\"methods\":[\"GET\"],"
                        + "\"paths\":[\"/pkg\"]}");
        // Now the policy itself allows it: no question, the overlay's rule decides.
        assertThat(get("always.test", "/pkg").httpStatus()).isEqualTo(200);
        assertThat(questions).hasSize(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "/pkg".equals(r.path("url.path").asText())).count() == 2);
        JsonNode second = record("/pkg");
        assertThat(second.get("rule").asText()).endsWith("approved.yaml:extensions.default.allow[0]");
        assertThat(second.has("approval")).isFalse();
    }

    @Test
    void noAnswerWithinTheTimeoutDenies() {
        answers.add("sleep");
        long start = System.nanoTime();
        CurlResult r = get("slow.test", "/slow");
        long tookMillis = (System.nanoTime() - start) / 1_000_000;
        assertThat(r.httpStatus()).isEqualTo(403);
        assertThat(tookMillis).isGreaterThanOrEqualTo(900);
        JsonNode rec = record("/slow");
        assertThat(rec.get("approval").asText()).isEqualTo("timeout");
        assertThat(rec.get("reason").asText()).isEqualTo("not_allowlisted");
        assertThat(rec.get("error").asText()).contains("did not answer within 1000 ms");
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain("/slow");
    }

    @Test
    void aHeldConnectOpensItsTunnelWhenGranted() {
        answers.add("{\"decision\":\"allow\",\"scope\":\"once\",\"by\":\"alice\"}");
        CurlResult r = get("tunnel.test", "/inside", "-p");
        assertThat(r.httpStatus()).isEqualTo(200);
        assertThat(questions.get(0).get("method").isNull()).isTrue();
        assertThat(origin.requests()).extracting(x -> x.uri()).contains("/inside");
    }

    /**
     * A request whose body the client cut with its FIN (none of it sent) while the request was held for approval: once
     * granted, it ends as one that can never complete (on epoll the FIN is read while reading is paused
     * for the hold; it must not be lost).
     */
    @Test
    void aHeldRequestCutByTheFinEndsOnceGranted() throws Exception {
        String path = "/held-cut";
        try (java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write(("POST http://once.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: once.test\r\nContent-Length: 10\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            await().atMost(Duration.ofSeconds(5)).until(() -> !questions.isEmpty());
            socket.shutdownOutput();
            answers.add("{\"decision\":\"allow\",\"scope\":\"once\",\"by\":\"alice\"}");
            assertThat(socket.getInputStream().read()).as("closed, with no answer").isEqualTo(-1);
        }
        JsonNode r = record(path);
        assertThat(r.get("approval").asText()).isEqualTo("granted");
        assertThat(r.path("error").asText()).isEqualTo("client_closed_mid_body");
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain(path);
    }

    /**
     * A client that resets its connection while its request is held: the answer that comes later finds
     * the connection gone, so the request never reaches the origin, and its record says why (with the
     * approval it got and the miss's reason).
     */
    @Test
    void aClientGoneWhileHeldIsRecordedAndNeverForwarded() throws Exception {
        String path = "/held-gone";
        try (java.net.Socket socket = new java.net.Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.getOutputStream().write(("GET http://once.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: once.test\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            await().atMost(Duration.ofSeconds(5)).until(() -> !questions.isEmpty());
            socket.setSoLinger(true, 0); // close with a reset
        }
        await().atMost(Duration.ofSeconds(5))
                .until(() -> sluice.server().metrics().activeConnections("default", "explicit").get() == 0);
        answers.add("{\"decision\":\"allow\",\"scope\":\"once\",\"by\":\"alice\"}");
        JsonNode r = record(path);
        assertThat(r.get("approval").asText()).isEqualTo("granted");
        assertThat(r.get("reason").asText()).isEqualTo("not_allowlisted");
        assertThat(r.get("error").asText()).isEqualTo("client closed while held for approval");
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain(path);
    }

    @Test
    void anAddressClassLiteralIsNeverAskedAbout() {
        CurlResult r = Curl.run(List.of("-x", sluice.proxyUrl(), "http://169.254.169.254/latest/meta-data/"));
        assertThat(r.httpStatus()).isEqualTo(403);
        assertThat(questions).isEmpty();
    }
}
