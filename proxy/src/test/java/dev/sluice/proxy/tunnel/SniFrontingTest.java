package dev.sluice.proxy.tunnel;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.HttpHeads;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SNIServerName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Domain fronting through CONNECT tunnels, over real sockets with the JDK's TLS client: the SNI of a
 * blind tunnel must name the CONNECT host (canonical forms compared) or a host the policy allows on
 * that port; otherwise the tunnel closes with {@code sni_mismatch} before one byte reaches the origin.
 * Tunnels to an inspected host are held to the same rule by interception. A {@code tls_only} rule
 * closes a tunnel whose first bytes are not a ClientHello ({@code not_http_or_tls}).
 */
class SniFrontingTest {

    @TempDir
    static Path dir;
    private static Origins tlsOrigin;
    private static ServerSocket countingOrigin;
    private static final AtomicLong countedBytes = new AtomicLong();
    private static ExecutorService threads;
    private static SluiceFixture sluice;

    @BeforeAll
    static void start() throws Exception {
        tlsOrigin = Origins.start(TestTls.create(dir.resolve("origin-tls"), "origin.test", "cdn.test"));
        tlsOrigin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("fronted ok")));
        countingOrigin = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads = Executors.newCachedThreadPool();
        threads.submit(() -> {
            while (!countingOrigin.isClosed()) {
                Socket s;
                try {
                    s = countingOrigin.accept();
                } catch (IOException e) {
                    return null;
                }
                threads.submit(() -> count(s));
            }
            return null;
        });
        int https = tlsOrigin.httpsPort();
        int raw = countingOrigin.getLocalPort();
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: origin.test
                        ports: [%1$d]
                      - host: cdn.test
                        ports: [%1$d]
                      - host: counted.test
                        ports: [%2$d]
                      - host: strict.test
                        ports: [%2$d]
                        tls_only: true
                      - host: api.inspected.test
                        ports: [%1$d, %2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    origin.test: 127.0.0.1
                    cdn.test: 127.0.0.1
                    evil.test: 127.0.0.1
                    counted.test: 127.0.0.1
                    strict.test: 127.0.0.1
                    api.inspected.test: 127.0.0.1
                inspect:
                  api.inspected.test: {}
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(https, raw));
    }

    private static Void count(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = in.read(buf)) > 0; ) {
                countedBytes.addAndGet(n);
            }
        } catch (IOException e) {
            // reset by Sluice: what was counted stands
        }
        return null;
    }

    @AfterAll
    static void stop() throws Exception {
        sluice.close();
        tlsOrigin.close();
        countingOrigin.close();
        threads.shutdownNow();
    }

    // ---- blind tunnels ------------------------------------------------------------------------

    @Test
    void blindTunnelWhoseSniNamesAnotherHostClosesBeforeAnyByteReachesTheOrigin() throws Exception {
        long before = countedBytes.get();
        String target = "counted.test:" + countingOrigin.getLocalPort();
        try (Socket tunnel = connect(target)) {
            SSLSocket tls = tlsOver(tunnel, trustAll(), "evil.test");
            assertThatThrownBy(tls::startHandshake).isInstanceOf(IOException.class);
        }
        JsonNode record = awaitRecord("tls.sni", "evil.test");
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("reason").asText()).isEqualTo("sni_mismatch");
        assertThat(record.path("tls.mode").asText()).isEqualTo("tunnel");
        assertThat(record.path("server.address").asText()).isEqualTo("counted.test");
        assertThat(record.path("error").asText()).contains("SNI");
        assertThat(countedBytes.get() - before).as("bytes that reached the origin").isZero();
    }

    @Test
    void optimisticClientHelloSentWithTheConnectIsCheckedToo() throws Exception {
        long before = countedBytes.get();
        String target = "counted.test:" + countingOrigin.getLocalPort();
        try (Socket socket = new Socket(sluice.address().getAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(clientHello("early-evil.test"));
            socket.getOutputStream().write(out.toByteArray());
            socket.getOutputStream().flush();
            InputStream in = socket.getInputStream();
            assertThat(HttpHeads.read(in)).startsWith("HTTP/1.1 200");
            assertThat(in.read()).as("tunnel closed").isEqualTo(-1);
        }
        JsonNode record = awaitRecord("tls.sni", "early-evil.test");
        assertThat(record.path("reason").asText()).isEqualTo("sni_mismatch");
        assertThat(countedBytes.get() - before).isZero();
    }

    @Test
    void blindTunnelWhoseSniIsAnotherAllowedHostOnThatPortRelays() throws Exception {
        String target = "origin.test:" + tlsOrigin.httpsPort();
        try (Socket tunnel = connect(target)) {
            SSLSocket tls = tlsOver(tunnel, tlsOrigin.tls().clientContext(), "cdn.test");
            tls.startHandshake();
            assertThat(httpGet(tls, "cdn.test", "/allowed-sni")).startsWith("HTTP/1.1 200").endsWith("fronted ok");
        }
        JsonNode record = awaitRecord("tls.sni", "cdn.test");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("rule").asText()).as("the rule that allows the SNI")
                .isEqualTo("extensions.default.allow[1]");
        assertThat(record.path("server.address").asText()).isEqualTo("origin.test");
    }

    @Test
    void sniIsComparedInCanonicalForm() throws Exception {
        String target = "Origin.Test.:" + tlsOrigin.httpsPort();
        try (Socket tunnel = connect(target)) {
            SSLSocket tls = tlsOver(tunnel, tlsOrigin.tls().clientContext(), "ORIGIN.test");
            tls.startHandshake();
            assertThat(httpGet(tls, "origin.test", "/canonical")).startsWith("HTTP/1.1 200");
        }
        JsonNode record = awaitRecord("tls.sni", "ORIGIN.test");
        assertThat(record.path("decision").asText()).isEqualTo("allow");
        assertThat(record.path("rule").asText()).isEqualTo("extensions.default.allow[0]");
    }

    @Test
    void sniOfAnInspectedHostThroughABlindTunnelIsRefused() throws Exception {
        long before = countedBytes.get();
        try (Socket tunnel = connect("counted.test:" + countingOrigin.getLocalPort())) {
            SSLSocket tls = tlsOver(tunnel, trustAll(), "api.inspected.test");
            assertThatThrownBy(tls::startHandshake).isInstanceOf(IOException.class);
        }
        JsonNode record = awaitRecord("tls.sni", "api.inspected.test");
        assertThat(record.path("reason").asText()).isEqualTo("sni_mismatch");
        assertThat(record.path("rule").asText()).isEqualTo("tls.sni");
        assertThat(countedBytes.get() - before).isZero();
    }

    @Test
    void clientHelloWithoutSniToANamedHostIsRefused() throws Exception {
        long before = countedBytes.get();
        try (Socket socket = new Socket(sluice.address().getAddress(), sluice.port())) {
            socket.setSoTimeout(10_000);
            String target = "counted.test:" + countingOrigin.getLocalPort();
            socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            assertThat(HttpHeads.read(in)).startsWith("HTTP/1.1 200");
            socket.getOutputStream().write(clientHello(null));
            assertThat(in.read()).isEqualTo(-1);
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "no_sni".equals(r.path("reason").asText())).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("tls.mode").asText()).isEqualTo("tunnel");
        assertThat(countedBytes.get() - before).isZero();
    }

    @Test
    void tlsOnlyRuleClosesATunnelWhoseFirstBytesAreNotTls() throws Exception {
        long before = countedBytes.get();
        try (Socket tunnel = connect("strict.test:" + countingOrigin.getLocalPort())) {
            tunnel.getOutputStream().write("GET / HTTP/1.1\r\nHost: strict.test\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            assertThat(tunnel.getInputStream().read()).isEqualTo(-1);
        }
        JsonNode record = awaitRecord("server.address", "strict.test");
        assertThat(record.path("reason").asText()).isEqualTo("not_http_or_tls");
        assertThat(record.path("rule").asText()).isEqualTo("extensions.default.allow[3]");
        assertThat(countedBytes.get() - before).isZero();
    }

    @Test
    void withoutTlsOnlyANonTlsTunnelOnAnotherPortStillRelays() throws Exception {
        long before = countedBytes.get();
        try (Socket tunnel = connect("counted.test:" + countingOrigin.getLocalPort())) {
            tunnel.getOutputStream().write("plain bytes".getBytes(StandardCharsets.US_ASCII));
            tunnel.getOutputStream().flush();
            await().atMost(Duration.ofSeconds(10)).until(() -> countedBytes.get() - before == "plain bytes".length());
        }
    }

    // ---- inspected host -----------------------------------------------------------------------

    @Test
    void interceptedTunnelWhoseSniNamesAnotherHostIsClosed() throws Exception {
        try (Socket tunnel = connect("api.inspected.test:" + tlsOrigin.httpsPort())) {
            SSLSocket tls = tlsOver(tunnel, trustAll(), "cdn.test");
            assertThatThrownBy(tls::startHandshake).isInstanceOf(IOException.class);
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "cdn.test".equals(r.path("tls.sni").asText()))
                .filter(r -> "intercept".equals(r.path("tls.mode").asText())).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("reason").asText()).isEqualTo("sni_mismatch");
        assertThat(record.path("server.address").asText()).isEqualTo("api.inspected.test");
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static Socket connect(String target) throws IOException {
        Socket socket = new Socket(sluice.address().getAddress(), sluice.port());
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(HttpHeads.read(socket.getInputStream())).startsWith("HTTP/1.1 200");
        return socket;
    }


    private static SSLSocket tlsOver(Socket tunnel, SSLContext context, String sni) throws IOException {
        SSLSocket tls = (SSLSocket) context.getSocketFactory().createSocket(tunnel, sni, tunnel.getPort(), true);
        SSLParameters params = tls.getSSLParameters();
        List<SNIServerName> names = List.of(new SNIHostName(sni));
        params.setServerNames(names);
        tls.setSSLParameters(params);
        return tls;
    }

    private static String httpGet(SSLSocket tls, String host, String path) throws IOException {
        OutputStream out = tls.getOutputStream();
        out.write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return new String(tls.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    private static SSLContext trustAll() throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new TrustManager[] {new X509TrustManager() {
            @Override
            public void checkClientTrusted(X509Certificate[] chain, String authType) {
            }

            @Override
            public void checkServerTrusted(X509Certificate[] chain, String authType) {
            }

            @Override
            public X509Certificate[] getAcceptedIssuers() {
                return new X509Certificate[0];
            }
        }}, null);
        return context;
    }

    /** The first flight of a JDK TLS client with the given SNI (none for null). */
    private static byte[] clientHello(String sni) throws Exception {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, null, null);
        SSLEngine engine = context.createSSLEngine(sni, 443);
        engine.setUseClientMode(true);
        SSLParameters params = engine.getSSLParameters();
        params.setServerNames(sni == null ? List.of() : List.of(new SNIHostName(sni)));
        engine.setSSLParameters(params);
        ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), out);
        out.flip();
        byte[] bytes = new byte[out.remaining()];
        out.get(bytes);
        return bytes;
    }

    private static JsonNode awaitRecord(String field, String value) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> value.equals(r.path(field).asText(null))).findFirst().orElse(null), r -> r != null);
    }
}
