package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.tls.InterceptionTls;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * TLS session resumption on the client-facing leg of an intercepted tunnel (RFC 8446 section 2.2), with
 * both providers: OpenSSL's {@code s_client} through a CONNECT tunnel saves the session Sluice's leaf
 * context gave it, and a second tunnel to the same host resumes it ({@code Reused}); the same ticket
 * offered for another inspected host is not accepted ({@code New}: one set of ticket keys per host).
 * The upstream leg is a full handshake every time (UpstreamPinsTest). The metrics count it: the leaf
 * cache misses on each host's first tunnel and hits on the second tunnel to a host
 * ({@code sluice_tls_leaf_cache_total}), and the client-facing handshakes are counted full or resumed
 * ({@code sluice_tls_downstream_handshakes_total}; {@code unknown} with the JDK provider).
 */
class DownstreamResumptionTest {

    private static final String HOST = "api.resume.test";
    private static final String OTHER = "other.resume.test";

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    @BeforeEach
    void startOrigin() throws IOException {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST, OTHER));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("resumed?")));
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
                      - host: "*.resume.test"
                        ports: [%1$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %2$s: 127.0.0.1
                    %3$s: 127.0.0.1
                inspect:
                  %2$s: { pins: tofu }
                  %3$s: { pins: tofu }
                tls:
                  extra_trust: ["%4$s"]
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(origin.httpsPort(), HOST, OTHER, origin.caPem().toAbsolutePath());
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
    }

    /**
     * One GET through a tunnel with {@code openssl s_client}; {@code -ign_eof} keeps it reading until the
     * answer's {@code Connection: close}, so the session ticket (sent before any answer) is saved.
     */
    private String sClient(String host, String sessionOption, Path session) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("openssl", "s_client", "-proxy", "127.0.0.1:" + sluice.port(),
                "-connect", host + ":" + origin.httpsPort(), "-servername", host,
                "-CAfile", sluice.dataDir().resolve("ca.crt.pem").toString(), "-verify_return_error", "-ign_eof",
                sessionOption, session.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().write(("GET /r HTTP/1.1\r\nHost: " + host + ":" + origin.httpsPort()
                + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(out).as(out).contains("Verify return code: 0 (ok)").contains("HTTP/1.1 200").contains("resumed?");
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aSecondTunnelToTheSameHostResumesTheDownstreamSessionAndAnotherHostDoesNot(String provider) throws Exception {
        start(provider);
        Path session = dir.resolve("session.pem");
        assertThat(sClient(HOST, "-sess_out", session)).contains("New, TLSv1.3");
        assertThat(metric("sluice_tls_leaf_cache_total", "hit")).isEqualTo(0.0);
        assertThat(metric("sluice_tls_leaf_cache_total", "miss")).isEqualTo(1.0);
        assertThat(sClient(HOST, "-sess_in", session)).contains("Reused, TLSv1.3");
        assertThat(metric("sluice_tls_leaf_cache_total", "hit")).as("the second tunnel to the host").isEqualTo(1.0);
        assertThat(metric("sluice_tls_leaf_cache_total", "miss")).isEqualTo(1.0);
        assertThat(sClient(OTHER, "-sess_in", session)).as("a ticket of another host").contains("New, TLSv1.3");
        assertThat(metric("sluice_tls_leaf_cache_total", "hit")).isEqualTo(1.0);
        assertThat(metric("sluice_tls_leaf_cache_total", "miss")).as("another host's first tunnel").isEqualTo(2.0);
        if (provider.equals("openssl")) {
            assertThat(metric("sluice_tls_downstream_handshakes_total", "full")).isEqualTo(2.0);
            assertThat(metric("sluice_tls_downstream_handshakes_total", "resumed")).isEqualTo(1.0);
        } else {
            assertThat(metric("sluice_tls_downstream_handshakes_total", "unknown")).isEqualTo(3.0);
        }
    }

    /** Reads the counter {@code name{result="<result>"}} from the server's metrics (0 when absent). */
    private double metric(String name, String result) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + name + "\\{result=\"" + result
                + "\"[^}]*} ([0-9.eE+]+)$").matcher(sluice.server().metrics().scrape());
        return m.find() ? Double.parseDouble(m.group(1)) : 0.0;
    }
}
