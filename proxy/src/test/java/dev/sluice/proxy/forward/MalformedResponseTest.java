package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.HttpHeads;
import dev.sluice.proxy.testing.RawOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * An origin that answers what is not HTTP/1.1, over real sockets: a bad status line is answered 502
 * {@code upstream_protocol_error} with an audit line, the upstream connection is closed and the
 * downstream connection keeps serving; a body that turns malformed after the head went out is cut
 * (the client never gets a last chunk for a broken body).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MalformedResponseTest {

    private RawOrigin origin;
    private SluiceFixture sluice;
    /** Per request path: counted down when the origin sees that connection closed by Sluice. */
    private final Map<String, CountDownLatch> closed = new ConcurrentHashMap<>();

    /** What the raw origin writes for a request path, right after the request head. */
    private static String answer(String path) {
        return switch (path) {
            case "/garbage" -> "SPEAK FRIEND AND ENTER\r\n\r\n";
            case "/bad-status" -> "HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nhi";
            case "/bad-chunk" -> "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ-not-a-size\r\n";
            // two responses in one write: the second answers nothing
            case "/double" -> "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                    + "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Smuggled: 1\r\n\r\nsmuggled";
            default -> "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine";
        };
    }

    @BeforeAll
    void start() throws Exception {
        origin = RawOrigin.start(this::serve);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: odd.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    odd.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port()));
    }

    /** Answers each request head by its path, then waits for Sluice to close the connection. */
    private Void serve(Socket s) throws IOException {
        try (s) {
            InputStream in = s.getInputStream();
            while (true) {
                String head = HttpHeads.readOrNull(in);
                if (head == null) {
                    return null;
                }
                String path = head.split(" ")[1];
                s.getOutputStream().write(answer(path).getBytes(StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                if (!path.equals("/good") && !path.equals("/double") && !path.startsWith("/after-double")) {
                    // Keep the connection open: only Sluice may close it.
                    if (in.read() < 0) {
                        closed.computeIfAbsent(path, p -> new CountDownLatch(1)).countDown();
                    }
                    return null;
                }
            }
        }
    }


    @AfterAll
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private String url(String path) {
        return "http://odd.test:" + origin.port() + path;
    }

    private JsonNode awaitRecord(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).findFirst().orElse(null), r -> r != null);
    }

    private void awaitOriginSeesClose(String path) {
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            CountDownLatch latch = closed.get(path);
            return latch != null && latch.getCount() == 0;
        });
    }

    @Test
    void aBadStatusLineIs502AndTheConnectionServesTheNextRequest() throws Exception {
        for (String path : List.of("/garbage", "/bad-status")) {
            try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
                RawHttp.Response refused = raw.send("GET " + url(path) + " HTTP/1.1\r\nHost: odd.test\r\n\r\n").read();
                assertThat(refused.status()).as(path).isEqualTo(502);
                assertThat(refused.body()).isEqualTo("sluice: upstream_protocol_error\n");
                assertThat(refused.header("X-Sluice-Reason")).isEqualTo("upstream_protocol_error");

                RawHttp.Response next = raw.send("GET " + url("/good") + " HTTP/1.1\r\nHost: odd.test\r\n\r\n").read();
                assertThat(next.status()).isEqualTo(200);
                assertThat(next.body()).isEqualTo("fine");
            }
            JsonNode record = awaitRecord(path);
            assertThat(record.path("decision").asText()).isEqualTo("allow");
            assertThat(record.path("outcome").asText()).isEqualTo("upstream_failure");
            assertThat(record.path("reason").asText()).isEqualTo("upstream_protocol_error");
            assertThat(record.path("http.response.status_code").asInt()).isEqualTo(502);
            assertThat(record.path("error").asText()).isEqualTo("malformed response head from upstream");
            assertThat(sluice.audit().stream().filter(r -> path.equals(r.path("url.path").asText(null)))).hasSize(1);
            awaitOriginSeesClose(path);
        }
    }

    @Test
    void curlGetsThe502() {
        CurlResult result = Curl.run(List.of("-x", sluice.proxyUrl(), url("/garbage")));
        assertThat(result.exitCode()).as(result.stderr()).isZero();
        assertThat(result.httpStatus()).isEqualTo(502);
        assertThat(result.body()).isEqualTo("sluice: upstream_protocol_error\n");
    }

    @Test
    void aBodyThatTurnsMalformedIsCutNeverEndedAsIfWhole() throws Exception {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(("GET " + url("/bad-chunk") + " HTTP/1.1\r\nHost: odd.test\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            String received;
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            try {
                socket.getInputStream().transferTo(all);
            } catch (SocketTimeoutException e) {
                throw new AssertionError("Sluice kept the connection open after a broken body: " + all, e);
            } catch (IOException e) {
                // reset: what was read is the answer
            }
            received = all.toString(StandardCharsets.ISO_8859_1);
            assertThat(received).startsWith("HTTP/1.1 200").contains("hello");
            // No terminating chunk: the client can tell the body is incomplete.
            assertThat(received).doesNotContain("\r\n0\r\n\r\n");
        }
        JsonNode record = awaitRecord("/bad-chunk");
        assertThat(record.path("error").asText()).isEqualTo("malformed response body from upstream");
        awaitOriginSeesClose("/bad-chunk");
    }

    /**
     * An origin that writes a second, unrequested response right behind the first: the pipelined next
     * request never gets it (found by the adversarial trial); it gets its own answer.
     */
    @Test
    void aResponseNobodyAskedForIsNeverTheAnswerToTheNextPipelinedRequest() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            raw.send("GET " + url("/double") + " HTTP/1.1\r\nHost: odd.test:" + origin.port() + "\r\n\r\n"
                    + "GET " + url("/after-double") + " HTTP/1.1\r\nHost: odd.test:" + origin.port() + "\r\n\r\n");
            RawHttp.Response first = raw.read();
            assertThat(first.status()).isEqualTo(200);
            assertThat(first.body()).isEqualTo("ok");
            RawHttp.Response second = raw.read();
            assertThat(second.header("X-Smuggled")).isNull();
            assertThat(second.body()).isEqualTo("fine");
        }
        assertThat(awaitRecord("/after-double").path("http.response.status_code").asInt()).isEqualTo(200);
    }
}
