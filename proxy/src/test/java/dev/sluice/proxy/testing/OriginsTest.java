package dev.sluice.proxy.testing;

import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class OriginsTest {

    private static Origins origins;

    @BeforeAll
    static void startOrigin() throws Exception {
        origins = Origins.start();
        origins.server().stubFor(get("/hello").willReturn(ok("hello from origin")));
    }

    @AfterAll
    static void stopOrigin() {
        origins.close();
    }

    private static HttpClient client(SSLContext context) {
        return HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(5))
                .proxy(HttpClient.Builder.NO_PROXY).build();
    }

    private static HttpResponse<String> fetch(HttpClient client, String url) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void servesHttpsWithTheTestCertificate() throws Exception {
        HttpResponse<String> response = fetch(client(origins.tls().clientContext()), origins.httpsUrl("/hello"));
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("hello from origin");
        X509Certificate served = (X509Certificate) response.sslSession().orElseThrow().getPeerCertificates()[0];
        assertThat(served).isEqualTo(origins.tls().serverCertificate());
    }

    @Test
    void servesPlainHttp() throws Exception {
        HttpResponse<String> response = fetch(client(origins.tls().clientContext()), origins.httpUrl("/hello"));
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("hello from origin");
    }

    @Test
    void anotherCaIsNotTrusted(@TempDir Path dir) throws Exception {
        SSLContext otherCa = TestTls.create(dir).clientContext();
        assertThatThrownBy(() -> fetch(client(otherCa), origins.httpsUrl("/hello")))
                .isInstanceOf(SSLHandshakeException.class);
    }

    @Test
    void leafCoversTheTestNamesAndChainsToTheCa() throws Exception {
        X509Certificate leaf = origins.tls().serverCertificate();
        leaf.verify(origins.tls().caCertificate().getPublicKey());
        leaf.checkValidity();
        List<String> sans = leaf.getSubjectAlternativeNames().stream().map(san -> san.get(1).toString()).toList();
        assertThat(sans).containsExactlyInAnyOrder("origin.test", "localhost", "127.0.0.1", "0:0:0:0:0:0:0:1");
        assertThat(leaf.getPublicKey().getAlgorithm()).isEqualTo("EC");
        assertThat(origins.tls().caCertificate().getBasicConstraints()).isGreaterThanOrEqualTo(0);
        assertThat(Files.readString(origins.caPem())).startsWith("-----BEGIN CERTIFICATE-----");
    }

    @Test
    void closingDeletesTheCertificatesItCreated() throws Exception {
        Path pem;
        try (Origins own = Origins.start()) {
            pem = own.caPem();
            assertThat(pem).exists();
        }
        assertThat(pem).doesNotExist();
        assertThat(pem.getParent()).doesNotExist();
    }
}
