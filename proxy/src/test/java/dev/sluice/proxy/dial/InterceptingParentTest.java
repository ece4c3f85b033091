package dev.sluice.proxy.dial;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.certs.SpkiPin;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A parent that intercepts TLS itself (mitmproxy's mitmdump, {@code apt-get install mitmproxy}) in front
 * of an inspected host: Sluice's upstream validation fails loudly, {@code upstream_tls_failed} while the
 * parent's CA is not trusted and {@code pin_mismatch} once it is in {@code tls.extra_trust} but the pins
 * name the origin's key; the origin never sees the request.
 */
class InterceptingParentTest {

    private static final Path MITMDUMP = Path.of("/usr/bin/mitmdump");
    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private Process mitm;
    private int mitmPort;
    private SluiceFixture sluice;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(Files.isExecutable(MITMDUMP), "skipped: mitmdump is not installed (" + MITMDUMP
                + "): apt-get install mitmproxy");
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("origin")));
        mitmPort = SluiceFixture.freePort();
        Path confdir = Files.createDirectories(dir.resolve("mitm"));
        mitm = new ProcessBuilder(MITMDUMP.toString(), "--mode", "regular", "--listen-host", "127.0.0.1",
                "--listen-port", Integer.toString(mitmPort), "--set", "confdir=" + confdir, "--ssl-insecure")
                .redirectErrorStream(true).redirectOutput(dir.resolve("mitm.log").toFile()).start();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
            if (!mitm.isAlive()) {
                throw new IOException("mitmdump exited: " + Files.readString(dir.resolve("mitm.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", mitmPort), 200);
                return Files.exists(confdir.resolve("mitmproxy-ca-cert.pem"));
            } catch (IOException e) {
                return false;
            }
        });
    }

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        if (mitm != null) {
            mitm.destroy();
            if (!mitm.waitFor(10, TimeUnit.SECONDS)) {
                mitm.destroyForcibly();
            }
        }
        if (origin != null) {
            origin.close();
        }
    }

    private void sluice(Path... trust) throws Exception {
        StringBuilder extra = new StringBuilder();
        for (Path p : trust) {
            extra.append(extra.length() == 0 ? "" : ", ").append('"').append(p.toAbsolutePath()).append('"');
        }
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - { host: %1$s, ports: [%2$d] }
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { pins: ["%3$s"] }
                tls:
                  extra_trust: [%4$s]
                upstream_proxy:
                  https: http://127.0.0.1:%5$d
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), SpkiPin.of(origin.tls().caCertificate()), extra, mitmPort));
    }

    /** CONNECT through Sluice, TLS trusting Sluice's CA, one GET; returns Sluice's status. */
    private int get(String path) throws Exception {
        SSLContext trustSluice = TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"));
        try (Socket raw = new Socket("127.0.0.1", sluice.port())) {
            raw.setSoTimeout(20_000);
            String authority = HOST + ":" + origin.httpsPort();
            raw.getOutputStream().write(("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            assertThat(UpstreamProxyTest.head(raw.getInputStream())).startsWith("HTTP/1.1 200");
            SSLSocket tls = (SSLSocket) trustSluice.getSocketFactory().createSocket(raw, HOST, origin.httpsPort(), false);
            tls.startHandshake();
            tls.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: " + authority + "\r\nConnection: close\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            String head = UpstreamProxyTest.head(tls.getInputStream());
            return Integer.parseInt(head.substring(9, 12));
        }
    }

    private JsonNode audited(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).findFirst().orElse(null), r -> r != null);
    }

    @Test
    void aTlsInterceptingParentFailsValidationThenThePin() throws Exception {
        sluice(origin.caPem());
        assertThat(get("/untrusted")).isEqualTo(502);
        assertThat(audited("/untrusted").path("reason").asText()).isEqualTo("upstream_tls_failed");
        sluice.close();

        sluice(origin.caPem(), dir.resolve("mitm").resolve("mitmproxy-ca-cert.pem"));
        assertThat(get("/pinned")).isEqualTo(502);
        JsonNode record = audited("/pinned");
        assertThat(record.path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }
}
