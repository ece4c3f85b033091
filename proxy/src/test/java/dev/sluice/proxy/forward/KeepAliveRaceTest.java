package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.HttpHeads;
import dev.sluice.proxy.testing.RawOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The keep-alive race (RFC 9112 section 9.3.1), over real sockets: an origin that answers one request
 * per connection without saying {@code Connection: close}, then closes the connection when the next
 * request arrives on it, unanswered. An idempotent request without a body is sent again on a new
 * connection and answered; a request with a body, a non-idempotent one, or one whose fresh connection
 * fails too is answered 502 as before, with one record each.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KeepAliveRaceTest {

    private RawOrigin origin;
    private SluiceFixture sluice;
    /** Every request head the origin read, in order, as "METHOD PATH". */
    private final Queue<String> seen = new ConcurrentLinkedQueue<>();

    @BeforeAll
    void start() throws Exception {
        origin = RawOrigin.start(this::serve);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: race.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    race.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port()));
    }

    @BeforeEach
    void clear() {
        seen.clear();
    }

    /**
     * Answers the first request of a connection (reading its body by Content-Length) unless its path
     * starts with {@code /never}, then closes the connection as soon as a second request head arrives.
     */
    private Void serve(Socket s) throws IOException {
        try (s) {
            InputStream in = s.getInputStream();
            String head = HttpHeads.readOrNull(in);
            if (head == null) {
                return null;
            }
            String[] line = head.split(" ");
            seen.add(line[0] + " " + line[1]);
            long length = contentLength(head);
            for (long i = 0; i < length; i++) {
                if (in.read() < 0) {
                    return null;
                }
            }
            if (line[1].startsWith("/never")) {
                return null;
            }
            String body = "served " + line[1];
            s.getOutputStream().write(("HTTP/1.1 200 OK\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                    .getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            String next = HttpHeads.readOrNull(in);
            if (next != null) {
                String[] nextLine = next.split(" ");
                seen.add(nextLine[0] + " " + nextLine[1] + " (dropped)");
            }
            return null;
        }
    }

    private static long contentLength(String head) {
        for (String field : head.split("\r\n")) {
            int colon = field.indexOf(':');
            if (colon > 0 && field.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
                return Long.parseLong(field.substring(colon + 1).trim());
            }
        }
        return 0;
    }


    @AfterAll
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private String url(String path) {
        return "http://race.test:" + origin.port() + path;
    }

    private List<JsonNode> awaitRecords(String path, int count) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).toList(), l -> l.size() >= count);
    }

    @Test
    void anIdempotentRequestOnAConnectionTheOriginClosesIsSentAgainAndAnswered() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            RawHttp.Response first = raw.send("GET " + url("/one") + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read();
            assertThat(first.status()).isEqualTo(200);
            assertThat(first.body()).isEqualTo("served /one");
            for (String path : List.of("/two", "/three")) {
                RawHttp.Response next = raw.send("GET " + url(path) + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read();
                assertThat(next.status()).as(path).isEqualTo(200);
                assertThat(next.body()).isEqualTo("served " + path);
            }
        }
        // Each later request reached the origin twice: dropped on the kept connection, served on a new one.
        assertThat(seen).containsSubsequence("GET /one", "GET /two (dropped)", "GET /two", "GET /three (dropped)",
                "GET /three");
        for (String path : List.of("/one", "/two", "/three")) {
            List<JsonNode> records = awaitRecords(path, 1);
            assertThat(records).as(path).hasSize(1);
            assertThat(records.get(0).path("decision").asText()).isEqualTo("allow");
            assertThat(records.get(0).path("http.response.status_code").asInt()).isEqualTo(200);
            assertThat(records.get(0).has("error")).as(path).isFalse();
        }
    }

    @Test
    void aRequestWithABodyIsNeverSentTwice() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            assertThat(raw.send("GET " + url("/warm") + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read().status())
                    .isEqualTo(200);
            RawHttp.Response put = raw.send("PUT " + url("/put") + " HTTP/1.1\r\nHost: race.test\r\n"
                    + "Content-Length: 5\r\n\r\nhello").read();
            assertThat(put.status()).isEqualTo(502);
            assertThat(put.header("X-Sluice-Reason")).isEqualTo("upstream_connect_failed");
        }
        assertThat(seen.stream().filter(s -> s.startsWith("PUT /put"))).containsExactly("PUT /put (dropped)");
        assertThat(awaitRecords("/put", 1)).hasSize(1);
    }

    @Test
    void aNonIdempotentRequestIsNeverSentTwice() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            assertThat(raw.send("GET " + url("/warm2") + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read().status())
                    .isEqualTo(200);
            RawHttp.Response post = raw.send("POST " + url("/post") + " HTTP/1.1\r\nHost: race.test\r\n"
                    + "Content-Length: 0\r\n\r\n").read();
            assertThat(post.status()).isEqualTo(502);
        }
        assertThat(seen.stream().filter(s -> s.startsWith("POST /post"))).containsExactly("POST /post (dropped)");
        JsonNode record = awaitRecords("/post", 1).get(0);
        assertThat(record.path("reason").asText()).isEqualTo("upstream_connect_failed");
        assertThat(record.path("error").asText()).startsWith("upstream");
    }

    @Test
    void aSecondFailureOnTheFreshConnectionIsAnswered502Once() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 10_000)) {
            assertThat(raw.send("GET " + url("/warm3") + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read().status())
                    .isEqualTo(200);
            RawHttp.Response never = raw.send("GET " + url("/never") + " HTTP/1.1\r\nHost: race.test\r\n\r\n").read();
            assertThat(never.status()).isEqualTo(502);
        }
        // Once on the kept connection (dropped), once on the fresh one (closed unanswered), never a third time.
        assertThat(seen.stream().filter(s -> s.startsWith("GET /never"))).containsExactly("GET /never (dropped)",
                "GET /never");
        List<JsonNode> records = awaitRecords("/never", 1);
        assertThat(records).hasSize(1);
        assertThat(records.get(0).path("http.response.status_code").asInt()).isEqualTo(502);
    }
}
