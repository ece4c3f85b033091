package dev.sluice.proxy.ops;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.RawHttp;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Resources come back: after a burst of connections of every kind (plain HTTP, a blind CONNECT tunnel,
 * an intercepted tunnel, a refused request, a malformed one, a request reset mid-body, a tunnel whose
 * SNI is refused), the process's open file descriptors ({@code /proc/self/fd}) and the direct memory
 * that live buffers pin (Netty's pooled allocator, and Netty's own direct-memory counter where it keeps
 * one) return to what they were before, within a small slack. Awaited, never slept. Clients run as curl
 * processes or as sockets this test closes, so that no client-side pool holds descriptors.
 */
class ResourceBaselineTest {

    /** Descriptors that may differ for reasons unrelated to connections (a log file rolled, a jar opened). */
    static final int FD_SLACK = 4;
    /** Direct bytes that may stay pinned (the allocator's thread caches hand out whole pages). */
    static final long DIRECT_SLACK_BYTES = 1L << 20;
    static final int ROUNDS = 12;

    @TempDir
    static Path dir;
    private static RecordingOrigin plain;
    private static Origins tls;
    private static SluiceFixture sluice;
    private static SSLContext trustSluice;

    @BeforeAll
    static void start() throws Exception {
        plain = new RecordingOrigin();
        tls = Origins.start(TestTls.create(dir.resolve("origin-tls"), "blind.test", "inspected.test"));
        tls.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("ok")));
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: plain.test
                        ports: [%1$d]
                      - host: blind.test
                        ports: [%2$d]
                      - host: inspected.test
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    plain.test: 127.0.0.1
                    blind.test: 127.0.0.1
                    inspected.test: 127.0.0.1
                inspect:
                  inspected.test: {}
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(plain.port(), tls.httpsPort(), tls.caPem().toAbsolutePath()));
        trustSluice = TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"));
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        tls.close();
        plain.close();
    }

    @Test
    void descriptorsAndDirectMemoryReturnToTheirBaselineAfterABurstOfEveryKind() throws Exception {
        // Warm-up: classes loaded, caches and leaf certificate made, pools sized.
        round();
        awaitQuiet();
        long fdBaseline = openDescriptors();
        long pinnedBaseline = pinnedDirectBytes();
        long nettyBaseline = PlatformDependent.usedDirectMemory();

        // The measurement sees connections: idle ones raise the count while they are open.
        List<Socket> idle = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            idle.add(new Socket(sluice.address().getAddress(), sluice.port()));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.server().openDownstreamConnections() >= 10);
        // Each idle connection holds two descriptors here (client and accepted socket); a descriptor the
        // baseline still counted may have closed since, so the check asks for one per connection.
        assertThat(openDescriptors()).isGreaterThanOrEqualTo(fdBaseline + 10);
        for (Socket s : idle) {
            s.close();
        }

        for (int i = 0; i < ROUNDS; i++) {
            round();
        }
        awaitQuiet();
        System.out.printf("resource baseline: fds %d -> %d, pinned direct %d -> %d bytes, netty direct %d -> %d bytes%n",
                fdBaseline, openDescriptors(), pinnedBaseline, pinnedDirectBytes(), nettyBaseline,
                PlatformDependent.usedDirectMemory());
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(openDescriptors()).as("open descriptors (baseline %d)", fdBaseline)
                    .isLessThanOrEqualTo(fdBaseline + FD_SLACK);
            assertThat(pinnedDirectBytes()).as("pinned direct bytes (baseline %d)", pinnedBaseline)
                    .isLessThanOrEqualTo(pinnedBaseline + DIRECT_SLACK_BYTES);
            if (nettyBaseline >= 0) {
                assertThat(PlatformDependent.usedDirectMemory()).as("Netty's direct memory (baseline %d)", nettyBaseline)
                        .isLessThanOrEqualTo(nettyBaseline + 16 * DIRECT_SLACK_BYTES);
            }
        });
    }

    /** One connection of every kind, each checked for the answer a user would see. */
    private static void round() throws Exception {
        CurlResult ok = Curl.run(List.of("-x", sluice.proxyUrl(), "http://plain.test:" + plain.port() + "/burst"));
        assertThat(ok.httpStatus()).isEqualTo(200);

        CurlResult blind = Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert", tls.caPem().toString(),
                "https://blind.test:" + tls.httpsPort() + "/burst"));
        assertThat(blind.httpStatus()).isEqualTo(200);

        try (Socket tunnel = connect("inspected.test:" + tls.httpsPort())) {
            SSLSocket s = (SSLSocket) trustSluice.getSocketFactory().createSocket(tunnel, "inspected.test",
                    tls.httpsPort(), true);
            s.getOutputStream().write(("GET /intercepted HTTP/1.1\r\nHost: inspected.test:" + tls.httpsPort()
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(answer).startsWith("HTTP/1.1 200");
            s.close();
        }

        CurlResult refused = Curl.run(List.of("-x", sluice.proxyUrl(), "http://refused.test/"));
        assertThat(refused.httpStatus()).isEqualTo(403);

        try (RawHttp raw = new RawHttp(sluice.address(), 5_000)) {
            assertThat(raw.send("NOT HTTP AT ALL\r\n\r\n").read().status()).isEqualTo(400);
        }

        try (Socket reset = new Socket(sluice.address().getAddress(), sluice.port())) {
            OutputStream out = reset.getOutputStream();
            out.write(("POST http://plain.test:" + plain.port() + "/reset HTTP/1.1\r\nHost: plain.test\r\n"
                    + "Content-Length: 1000000\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(new byte[4096]);
            out.flush();
            reset.setSoLinger(true, 0); // close with a reset, mid-body
        }

        try (Socket tunnel = connect("blind.test:" + tls.httpsPort())) {
            SSLSocket s = (SSLSocket) tls.tls().clientContext().getSocketFactory().createSocket(tunnel, "elsewhere.test",
                    tls.httpsPort(), true);
            SSLParameters params = s.getSSLParameters();
            params.setServerNames(List.of(new SNIHostName("elsewhere.test")));
            s.setSSLParameters(params);
            try {
                s.startHandshake();
                throw new AssertionError("a fronted handshake went through");
            } catch (IOException expected) {
                // sni_mismatch: closed by Sluice
            }
            s.close();
        }
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
            assertThat(b).isNotNegative();
            head.append((char) b);
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 200");
        return socket;
    }

    /** Waits until Sluice has no client connection and the recording origin none either. */
    private static void awaitQuiet() {
        await().atMost(Duration.ofSeconds(30)).until(() -> sluice.server().openDownstreamConnections() == 0
                && plain.closedConnections() == plain.connections());
    }

    private static long openDescriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    private static long pinnedDirectBytes() {
        return PooledByteBufAllocator.DEFAULT.pinnedDirectMemory();
    }
}
