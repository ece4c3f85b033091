package dev.sluice.proxy.testing;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class CurlTest {

    private static Origins origins;

    @BeforeAll
    static void startOrigin() throws Exception {
        origins = Origins.start();
        origins.server().stubFor(get("/hello").willReturn(ok("hello from origin")));
        origins.server().stubFor(get("/teapot").willReturn(aResponse().withStatus(418).withBody("short and stout")));
        origins.server().stubFor(get("/slow").willReturn(ok("late").withFixedDelay(5_000)));
    }

    @AfterAll
    static void stopOrigin() {
        origins.close();
    }

    @Test
    void fetchesOverHttpsTrustingTheTestCa() {
        Curl.CurlResult result = Curl.run(List.of("--cacert", origins.caPem().toString(),
                origins.httpsUrl("/hello")));
        assertThat(result.exitCode()).as(result.stderr()).isZero();
        assertThat(result.httpStatus()).isEqualTo(200);
        assertThat(result.body()).isEqualTo("hello from origin");
    }

    @Test
    void reportsTheStatusApartFromTheBody() {
        Curl.CurlResult result = Curl.run(List.of(origins.httpUrl("/teapot")));
        assertThat(result.exitCode()).isZero();
        assertThat(result.httpStatus()).isEqualTo(418);
        assertThat(result.body()).isEqualTo("short and stout");
    }

    @Test
    void withoutTheCaTheCertificateIsRejected() {
        Curl.CurlResult result = Curl.run(List.of(origins.httpsUrl("/hello")));
        assertThat(result.exitCode()).isEqualTo(60); // peer certificate cannot be authenticated
        assertThat(result.httpStatus()).isZero();
        assertThat(result.stderr()).isNotBlank();
    }

    @Test
    void aRefusedConnectionIsExitCodeSevenWithoutStatus() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        Curl.CurlResult result = Curl.run(List.of("http://127.0.0.1:" + closedPort + "/"));
        assertThat(result.exitCode()).isEqualTo(7);
        assertThat(result.httpStatus()).isZero();
        assertThat(result.body()).isEmpty();
    }

    @Test
    void usesProxyVariablesOnlyWhenGivenExplicitly() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        Curl.CurlResult viaDeadProxy = Curl.run(List.of(origins.httpUrl("/hello")), Curl.DEFAULT_TIMEOUT,
                Map.of("http_proxy", "http://127.0.0.1:" + closedPort));
        assertThat(viaDeadProxy.exitCode()).isEqualTo(7);
        Curl.CurlResult direct = Curl.run(List.of(origins.httpUrl("/hello")));
        assertThat(direct.httpStatus()).isEqualTo(200);
    }

    @Test
    void killsCurlAfterTheTimeout() {
        assertThatThrownBy(() -> Curl.run(List.of(origins.httpUrl("/slow")), Duration.ofMillis(500)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("did not finish");
    }
}
