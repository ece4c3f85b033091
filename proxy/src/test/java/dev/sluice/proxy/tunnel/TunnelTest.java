package dev.sluice.proxy.tunnel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RawOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * CONNECT tunnels as blind byte relays: half-close travels through, bulk data arrives intact under
 * backpressure, and the tunnel's audit record carries the byte counts.
 */
class TunnelTest {

    private static RawOrigin origin;
    private static SluiceFixture sluice;

    /**
     * A raw TCP origin: reads everything until the client's FIN, then answers
     * {@code <bytes> <sha256>\n} followed by {@code echoBytes} of data, and closes.
     */
    @BeforeAll
    static void start() throws Exception {
        origin = RawOrigin.start(TunnelTest::serve);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: raw.test
                        ports: [%d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    raw.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.port()));
    }

    private static Void serve(Socket socket) throws Exception {
        try (socket) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[65536];
            long total = 0;
            for (int n; (n = in.read(buf)) > 0; ) {
                digest.update(buf, 0, n);
                total += n;
            }
            OutputStream out = socket.getOutputStream();
            out.write((total + " " + HexFormat.of().formatHex(digest.digest()) + "\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }
        return null;
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        origin.close();
    }

    private static Socket openTunnel() throws IOException {
        Socket socket = new Socket(sluice.address().getAddress(), sluice.port());
        socket.setSoTimeout(30_000);
        OutputStream out = socket.getOutputStream();
        out.write(("CONNECT raw.test:" + origin.port() + " HTTP/1.1\r\nHost: raw.test\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        // Read the response head byte by byte so no tunnel byte is consumed.
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            assertThat(b).as("tunnel answer").isNotNegative();
            head.append((char) b);
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 200 ");
        return socket;
    }

    @Test
    void halfCloseReachesTheOriginAndItsAnswerStillComesBack() throws Exception {
        try (Socket socket = openTunnel()) {
            socket.getOutputStream().write("hello tunnel".getBytes(StandardCharsets.US_ASCII));
            socket.shutdownOutput();
            String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            assertThat(answer).isEqualTo("12 " + HexFormat.of().formatHex(
                    digest.digest("hello tunnel".getBytes(StandardCharsets.US_ASCII))) + "\n");
        }
    }

    @Test
    void bulkUploadArrivesIntactAndIsCounted() throws Exception {
        byte[] chunk = new byte[1 << 20];
        new Random(3).nextBytes(chunk);
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        int megabytes = 64;
        String answer;
        try (Socket socket = openTunnel()) {
            OutputStream out = socket.getOutputStream();
            for (int i = 0; i < megabytes; i++) {
                out.write(chunk);
                digest.update(chunk);
            }
            socket.shutdownOutput();
            answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            assertThat(answer).isEqualTo((long) megabytes * chunk.length + " "
                    + HexFormat.of().formatHex(digest.digest()) + "\n");
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("bytes.sent").asLong() >= (long) megabytes * chunk.length).findFirst()
                .orElse(null), r -> r != null);
        assertThat(record.path("tls.mode").asText()).isEqualTo("tunnel");
        assertThat(record.path("bytes.sent").asLong()).isEqualTo((long) megabytes * chunk.length);
        assertThat(record.path("bytes.received").asLong()).isEqualTo(answer.length());
    }

    @Test
    void bytesSentRightBehindTheConnectHeaderAreNotLost() throws Exception {
        try (Socket socket = new Socket(sluice.address().getAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(("CONNECT raw.test:" + origin.port() + " HTTP/1.1\r\nHost: raw.test\r\n\r\nearly-bytes")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            socket.shutdownOutput();
            String all = new String(socket.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
            String answer = all.substring(all.indexOf("\r\n\r\n") + 4);
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            assertThat(answer).isEqualTo("11 " + HexFormat.of().formatHex(
                    digest.digest("early-bytes".getBytes(StandardCharsets.US_ASCII))) + "\n");
        }
    }

    @Test
    void tunnelToAnUnlistedPortIsRefused() throws Exception {
        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            RawHttp.Response response = raw.send("CONNECT raw.test:1 HTTP/1.1\r\nHost: raw.test\r\n\r\n").read();
            assertThat(response.status()).isEqualTo(403);
            assertThat(response.body()).isEqualTo("sluice: port_not_allowed\n");
        }
    }
}
