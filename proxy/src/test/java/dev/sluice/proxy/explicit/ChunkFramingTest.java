package dev.sluice.proxy.explicit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Strict HTTP/1.1 framing over real sockets (RFC 9112 sections 6 and 7.1): every malformed chunked
 * request body is answered 400 {@code malformed_request} and every ambiguous head 400
 * {@code ambiguous_framing}, recorded, and the
 * origin receives not one byte of it; a body that breaks after its head went upstream never reaches
 * its end at the origin; a malformed chunked response is never passed on as a whole one.
 */
class ChunkFramingTest {

    private static RecordingOrigin origin;
    private static ServerSocket badOrigin;
    private static SluiceFixture sluice;
    private static final AtomicInteger counter = new AtomicInteger();

    @BeforeAll
    static void start() throws Exception {
        origin = new RecordingOrigin();
        badOrigin = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread serve = new Thread(ChunkFramingTest::serveMalformedResponses, "bad-chunk-origin");
        serve.setDaemon(true);
        serve.start();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%d, %d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port(), badOrigin.getLocalPort()));
    }

    @AfterAll
    static void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
        if (badOrigin != null) {
            badOrigin.close();
        }
    }

    static Stream<Arguments> malformedBodies() {
        return StrictRequestDecoderTest.malformedBodies();
    }

    static Stream<Arguments> ambiguousHeads() {
        return StrictRequestDecoderTest.ambiguousHeads();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedBodies")
    void malformedChunkedBodyIsRefusedAndTheOriginSeesNothing(String name, String body) throws IOException {
        String path = "/chunk-" + counter.incrementAndGet();
        long before = origin.bytesReceived();
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n" + body).read();
            assertThat(response.status()).as(name).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: malformed_request\n");
            assertThat(response.header("connection")).isEqualTo("close");
            assertThat(raw.closedByPeer()).isTrue();
        }
        JsonNode record = awaitAudit("url.path", path);
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("reason").asText()).isEqualTo("malformed_request");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(400);
        assertThat(record.path("error").asText()).startsWith("malformed chunked request body");
        awaitOriginConnectionsClosed();
        assertThat(origin.bytesReceived() - before).as("bytes the origin received").isZero();
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals(path));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("ambiguousHeads")
    void ambiguousHeadIsRefusedAndTheOriginSeesNothing(String name, String rest) throws IOException {
        String path = "/head-" + counter.incrementAndGet();
        long before = origin.bytesReceived();
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: origin.test\r\n" + rest).read();
            assertThat(response.status()).as(name).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: ambiguous_framing\n");
            assertThat(raw.closedByPeer()).isTrue();
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "ambiguous_framing".equals(r.path("reason").asText()))
                .filter(r -> r.path("error").asText().equals(expectedHeadDetail(name)))
                .reduce((a, b) -> b).orElse(null), r -> r != null);
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        awaitOriginConnectionsClosed();
        assertThat(origin.bytesReceived() - before).isZero();
    }

    private static String expectedHeadDetail(String name) {
        if (name.startsWith("Content-Length with")) {
            return "Content-Length with Transfer-Encoding";
        }
        return name.startsWith("Content-Length") ? "Content-Length repeated" : "Transfer-Encoding repeated";
    }

    @Test
    void bodyThatBreaksAfterItsHeadWentUpstreamNeverEndsAtTheOrigin() throws IOException {
        String path = "/mid-body";
        long before = origin.bytesReceived();
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            raw.send("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
            // The head and the first chunk have reached the origin ...
            await().atMost(Duration.ofSeconds(10)).until(() -> origin.bytesReceived() - before > 0);
            // ... then the framing breaks: "0x" is not 1*HEXDIG, and what follows would end the body.
            RawHttp.Response response = raw.send("0x5\r\nworld\r\n0\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(400);
            assertThat(response.body()).isEqualTo("sluice: malformed_request\n");
            assertThat(raw.closedByPeer()).isTrue();
        }
        JsonNode record = awaitAudit("url.path", path);
        assertThat(record.path("reason").asText()).isEqualTo("malformed_request");
        assertThat(record.path("error").asText()).startsWith("malformed chunked request body");
        // Sluice closed its upstream connection before the request's end: the origin never saw a
        // complete request (a complete one would be recorded and answered).
        awaitOriginConnectionsClosed();
        assertThat(origin.requests()).noneMatch(r -> r.uri().equals(path));
    }

    @Test
    void malformedChunkedResponseIsCutNotRelayedAsWhole() throws IOException {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            raw.send("GET http://origin.test:" + badOrigin.getLocalPort() + "/bad-response HTTP/1.1\r\n"
                    + "Host: origin.test\r\n\r\n");
            String seen = readAll(raw);
            assertThat(seen).startsWith("HTTP/1.1 200");
            assertThat(seen).contains("hello");
            // Neither the bytes after the bad chunk-size nor a terminating last chunk reach the client.
            assertThat(seen).doesNotContain("world").doesNotContain("\r\n0\r\n\r\n");
        }
        JsonNode record = awaitAudit("url.path", "/bad-response");
        assertThat(record.path("error").asText()).isEqualTo("malformed response body from upstream");
    }

    @Test
    void validChunkedBodyWithExtensionsAndTrailersIsForwardedWhole() throws IOException {
        String path = "/valid-chunks";
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("POST http://origin.test:" + origin.port() + path + " HTTP/1.1\r\n"
                    + "Host: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5;name=value\r\nhello\r\n6 ;q=\"a b\"\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(200);
            assertThat(response.body()).startsWith("ok 11 ");
        }
        assertThat(origin.requests()).anyMatch(r -> r.uri().equals(path) && r.bodyBytes() == 11);
    }

    private static void awaitOriginConnectionsClosed() {
        await().atMost(Duration.ofSeconds(10)).until(() -> origin.closedConnections() == origin.connections());
    }

    private static JsonNode awaitAudit(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(
                () -> sluice.audit().stream().filter(r -> value.equals(r.path(field).asText(null))).findFirst()
                        .orElse(null),
                r -> r != null);
    }

    private static String readAll(RawHttp raw) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        InputStream in = raw.input();
        byte[] buf = new byte[4096];
        for (int n; (n = in.read(buf)) >= 0; ) {
            out.write(buf, 0, n);
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /** An origin whose chunked response breaks: a valid chunk, then "0x5", more data and a last chunk. */
    private static void serveMalformedResponses() {
        while (!badOrigin.isClosed()) {
            try (Socket s = badOrigin.accept()) {
                InputStream in = s.getInputStream();
                int last4 = 0;
                while (last4 != 0x0d0a0d0a) {
                    int b = in.read();
                    if (b < 0) {
                        break;
                    }
                    last4 = (last4 << 8) | b;
                }
                OutputStream out = s.getOutputStream();
                out.write(("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                        + "5\r\nhello\r\n0x5\r\nworld\r\n0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                s.shutdownOutput();
                // Wait for Sluice to close its side.
                while (in.read() >= 0) {
                    // drain
                }
            } catch (IOException e) {
                // closed at the end of the class, or Sluice closed first
            }
        }
    }
}
