package dev.sluice.proxy.dial;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.SluiceFixture;
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
import java.util.Base64;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What crosses the wire to a parent proxy, seen by a raw-socket parent: the exact CONNECT request
 * (authority-form of the checked address, Basic credentials), bytes the parent sends in the same
 * segment as its 200 (a server that speaks first) reaching the client, and the tunnel's counters
 * counting every byte of the parent connection, the CONNECT exchange included.
 */
class ParentWireTest {

    private static final String BANNER = "SSH-2.0-banner-right-behind-the-200\r\n";
    private static final String OK = "HTTP/1.1 200 Connection established\r\n\r\n";

    @TempDir
    Path dir;
    private ServerSocket parent;
    private SluiceFixture sluice;

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (parent != null) {
            parent.close();
        }
    }

    @Test
    void bytesInTheSameSegmentAsTheParents200ReachTheClientAndEveryByteIsCounted() throws Exception {
        parent = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        CompletableFuture<String> seen = CompletableFuture.supplyAsync(() -> {
            try (Socket s = parent.accept()) {
                s.setSoTimeout(15_000);
                String head = UpstreamProxyTest.head(s.getInputStream());
                OutputStream out = s.getOutputStream();
                // One write: the 200 and the server's first bytes in one segment.
                out.write((OK + BANNER).getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = s.getInputStream();
                byte[] ping = in.readNBytes(5);
                out.write(("pong:" + new String(ping, StandardCharsets.US_ASCII)).getBytes(StandardCharsets.US_ASCII));
                out.flush();
                s.shutdownOutput();
                in.readAllBytes();
                return head;
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        Path auth = dir.resolve("auth");
        Files.writeString(auth, "corp:s3cret\n");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: banner.test, ports: [2222] }
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    banner.test: 127.0.0.1
                upstream_proxy:
                  https: http://127.0.0.1:%d
                  auth_file: "%s"
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(parent.getLocalPort(), auth.toAbsolutePath()));
        String received;
        try (Socket client = new Socket("127.0.0.1", sluice.port())) {
            client.setSoTimeout(15_000);
            client.getOutputStream().write("CONNECT banner.test:2222 HTTP/1.1\r\nHost: banner.test:2222\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            String answer = UpstreamProxyTest.head(client.getInputStream());
            assertThat(answer).startsWith("HTTP/1.1 200");
            byte[] banner = client.getInputStream().readNBytes(BANNER.length());
            assertThat(new String(banner, StandardCharsets.US_ASCII)).isEqualTo(BANNER);
            client.getOutputStream().write("ping!".getBytes(StandardCharsets.US_ASCII));
            received = new String(client.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        }
        assertThat(received).isEqualTo("pong:ping!");
        String request = seen.get(15, TimeUnit.SECONDS);
        String basic = Base64.getEncoder().encodeToString("corp:s3cret".getBytes(StandardCharsets.UTF_8));
        assertThat(request).startsWith("CONNECT 127.0.0.1:2222 HTTP/1.1\r\n")
                .containsIgnoringCase("\r\nhost: 127.0.0.1:2222\r\n")
                .containsIgnoringCase("proxy-authorization: Basic " + basic + "\r\n")
                .doesNotContain("banner.test");
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "tunnel".equals(r.path("tls.mode").asText(null))).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("bytes.sent").asLong()).isEqualTo(request.length() + "ping!".length());
        assertThat(record.path("bytes.received").asLong())
                .isEqualTo(OK.length() + BANNER.length() + "pong:ping!".length());
        String auditText = Files.readString(sluice.dataDir().resolve("audit.jsonl"));
        assertThat(auditText).doesNotContain("s3cret").doesNotContain(basic);
    }

    @Test
    void crLfOrSpacesInATargetNeverReachTheParent() throws Exception {
        parent = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();
        Thread acceptor = new Thread(() -> {
            while (!parent.isClosed()) {
                try (Socket s = parent.accept()) {
                    accepted.incrementAndGet();
                } catch (IOException e) {
                    return;
                }
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: banner.test, ports: [2222] }
                upstream_proxy:
                  https: http://127.0.0.1:%d
                  connect_by: hostname
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(parent.getLocalPort()));
        for (String target : java.util.List.of("banner.test%0d%0aX-Injected:%20y:2222", "banner.test%20x:2222",
                "banner.test\tx:2222", "banner.test:2222%0d%0a")) {
            try (Socket client = new Socket("127.0.0.1", sluice.port())) {
                client.setSoTimeout(15_000);
                client.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: banner.test\r\n\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                assertThat(UpstreamProxyTest.head(client.getInputStream())).as(target).startsWith("HTTP/1.1 400");
            }
        }
        assertThat(accepted.get()).isZero();
    }

    @Test
    void aParentThatIsSluiceItselfIsRefusedNotLooped() throws Exception {
        int port = SluiceFixture.freePort();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: banner.test, ports: [2222] }
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    banner.test: 127.0.0.1
                upstream_proxy:
                  https: http://127.0.0.1:%1$d
                listen:
                  proxy: 127.0.0.1:%1$d
                """.formatted(port));
        try (Socket client = new Socket("127.0.0.1", sluice.port())) {
            client.setSoTimeout(15_000);
            client.getOutputStream().write("CONNECT banner.test:2222 HTTP/1.1\r\nHost: banner.test\r\n\r\n"
                    .getBytes(StandardCharsets.US_ASCII));
            assertThat(UpstreamProxyTest.head(client.getInputStream())).startsWith("HTTP/1.1 502")
                    .contains("X-Sluice-Reason: upstream_proxy_failed");
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "upstream_proxy_failed".equals(r.path("reason").asText(null))).findFirst().orElse(null),
                r -> r != null);
        assertThat(record.path("error").asText()).contains("own listener");
        assertThat(sluice.audit()).hasSize(1);
    }
}
