package dev.sluice.proxy.intercept;

import dev.sluice.proxy.tls.InterceptionTls;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ALPN on intercepted hosts (RFC 7301), with both TLS providers: a client that offers neither h2 nor
 * http/1.1 is refused with the TLS alert {@code no_application_protocol} and an audit record naming
 * ALPN and the host; an h2-only client and curl --http2 get h2 (H2InterceptionTest covers the streams);
 * clients that offer no ALPN, or http/1.1 alone, keep working on HTTP/1.1. Java's SSLSocket and curl
 * through a CONNECT tunnel to a WireMock TLS origin on loopback.
 */
class AlpnTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    @BeforeEach
    void startOrigin() throws IOException {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("{\"ok\":true}")));
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private void start(String provider) throws Exception {
        String policy = """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { pins: tofu }
                tls:
                  extra_trust: ["%3$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), origin.caPem().toAbsolutePath());
        String before = System.getProperty(InterceptionTls.PROVIDER_PROPERTY);
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, provider);
        try {
            sluice = SluiceFixture.start(policy);
        } finally {
            if (before == null) {
                System.clearProperty(InterceptionTls.PROVIDER_PROPERTY);
            } else {
                System.setProperty(InterceptionTls.PROVIDER_PROPERTY, before);
            }
        }
        assertThat(sluice.server().interception().provider().name()).isEqualToIgnoringCase(provider);
    }

    private Socket connectTunnel() throws IOException {
        String target = HOST + ":" + origin.httpsPort();
        Socket socket = new Socket("127.0.0.1", sluice.port());
        socket.setSoTimeout(10_000);
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        InputStream in = socket.getInputStream();
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            head.append((char) in.read());
        }
        assertThat(head.toString()).startsWith("HTTP/1.1 200");
        return socket;
    }

    /** A TLS client over the tunnel, trusting only Sluice's CA, offering {@code alpn} (none when empty). */
    private SSLSocket tlsOver(Socket tunnel, String... alpn) throws Exception {
        SSLSocket tls = (SSLSocket) TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")).getSocketFactory()
                .createSocket(tunnel, HOST, origin.httpsPort(), true);
        if (alpn.length > 0) {
            SSLParameters params = tls.getSSLParameters();
            params.setApplicationProtocols(alpn);
            tls.setSSLParameters(params);
        }
        return tls;
    }

    private String get(SSLSocket tls, String path) throws IOException {
        tls.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + origin.httpsPort()
                + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        tls.getOutputStream().flush();
        return new String(tls.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    private JsonNode audited(Predicate<JsonNode> which) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream().filter(which)
                .reduce((a, b) -> b).orElse(null), r -> r != null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aClientOfferingNeitherH2NorHttp11GetsTheNoApplicationProtocolAlertAndAnAuditRecord(String provider)
            throws Exception {
        start(provider);
        try (Socket tunnel = connectTunnel(); SSLSocket tls = tlsOver(tunnel, "spdy/3.1", "h3")) {
            assertThatThrownBy(tls::startHandshake).isInstanceOf(SSLHandshakeException.class)
                    .hasMessageContaining("no_application_protocol");
        }
        JsonNode record = audited(r -> "no_application_protocol".equals(r.path("reason").asText(null)));
        assertThat(record.path("decision").asText()).isEqualTo("deny");
        assertThat(record.path("extension").asText()).isEqualTo("default");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(record.path("server.address").asText()).isEqualTo(HOST);
        assertThat(record.path("error").asText()).contains("ALPN").contains("[spdy/3.1, h3]").contains(HOST);
        assertThat(origin.server().getAllServeEvents()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void clientsWithoutAlpnOrWithHttp11AloneGetHttp11AndH2ClientsGetH2(String provider) throws Exception {
        start(provider);
        try (Socket tunnel = connectTunnel(); SSLSocket tls = tlsOver(tunnel)) {
            assertThat(get(tls, "/no-alpn")).startsWith("HTTP/1.1 200");
            assertThat(tls.getApplicationProtocol()).isEmpty();
        }
        try (Socket tunnel = connectTunnel(); SSLSocket tls = tlsOver(tunnel, "http/1.1")) {
            assertThat(get(tls, "/http11-only")).startsWith("HTTP/1.1 200");
            assertThat(tls.getApplicationProtocol()).isEqualTo("http/1.1");
        }
        try (Socket tunnel = connectTunnel(); SSLSocket tls = tlsOver(tunnel, "h2")) {
            tls.startHandshake();
            assertThat(tls.getApplicationProtocol()).as("an h2-only client").isEqualTo("h2");
        }
        try (Socket tunnel = connectTunnel(); SSLSocket tls = tlsOver(tunnel, "h2", "http/1.1")) {
            tls.startHandshake();
            assertThat(tls.getApplicationProtocol()).as("the server prefers h2").isEqualTo("h2");
        }
        // curl --http2 offers h2 and http/1.1 in its ALPN list: it gets h2.
        CurlResult curl = Curl.run(List.of("--http2", "-v", "-x", sluice.proxyUrl(), "--cacert",
                sluice.dataDir().resolve("ca.crt.pem").toString(),
                "https://" + HOST + ":" + origin.httpsPort() + "/curl-http2"));
        assertThat(curl.exitCode()).as(curl.stderr()).isZero();
        assertThat(curl.httpStatus()).isEqualTo(200);
        assertThat(curl.stderr()).contains("ALPN: offers h2").contains("< HTTP/2 200");
        assertThat(audited(r -> "/curl-http2".equals(r.path("url.path").asText(null)))
                .path("http.response.status_code").asInt()).isEqualTo(200);
        assertThat(sluice.audit()).noneMatch(r -> "no_application_protocol".equals(r.path("reason").asText(null)));
    }
}
