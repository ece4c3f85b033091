package dev.sluice.proxy.tls;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.certs.PinStore;
import dev.sluice.certs.SpkiPin;
import dev.sluice.proxy.cli.SluiceCli;
import dev.sluice.proxy.server.PolicyReloader;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;

/**
 * Pins hold on every upstream connection to an inspected host, with both TLS providers: a policy
 * reload or a {@code sluice pins reset} applies to the very next request, also when the upstream TLS
 * session could have been resumed; a mismatch is counted and logged once. curl through Sluice to a
 * WireMock TLS origin on loopback.
 */
class UpstreamPinsTest {

    private static final String HOST = "api.llm.test";
    private static final String WRONG_PIN = "sha256/" + Base64.getEncoder().encodeToString(new byte[32]);

    @org.junit.jupiter.api.io.TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void captureLogs() {
        logged.start();
        for (Class<?> source : List.of(InterceptionTls.class, ResumableTrust.class)) {
            ((Logger) LoggerFactory.getLogger(source)).addAppender(logged);
        }
    }

    @AfterEach
    void releaseLogs() {
        for (Class<?> source : List.of(InterceptionTls.class, ResumableTrust.class)) {
            ((Logger) LoggerFactory.getLogger(source)).detachAppender(logged);
        }
    }

    /** Returns how many lines a logger of {@code source} wrote that contain {@code text}. */
    private long logLines(Class<?> source, String text) {
        return logged.list.stream().filter(e -> e.getLoggerName().equals(source.getName()))
                .filter(e -> e.getFormattedMessage().contains(text)).count();
    }

    @BeforeEach
    void startOrigin() throws IOException {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"ok\":true}")));
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private String policy(String inspectEntry) {
        return """
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
                  %1$s: %3$s
                tls:
                  extra_trust: ["%4$s"]
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), inspectEntry, origin.caPem().toAbsolutePath());
    }

    /** Starts Sluice with the TLS provider {@code provider} ({@code openssl} or {@code jdk}). */
    private void start(String provider, String inspectEntry) throws Exception {
        String before = System.getProperty(InterceptionTls.PROVIDER_PROPERTY);
        System.setProperty(InterceptionTls.PROVIDER_PROPERTY, provider);
        try {
            sluice = SluiceFixture.start(policy(inspectEntry));
        } finally {
            if (before == null) {
                System.clearProperty(InterceptionTls.PROVIDER_PROPERTY);
            } else {
                System.setProperty(InterceptionTls.PROVIDER_PROPERTY, before);
            }
        }
        assertThat(sluice.server().interception().provider().name()).isEqualToIgnoringCase(provider);
    }

    private void reloadTo(String inspectEntry) throws IOException {
        sluice.writePolicy(policy(inspectEntry));
        assertThat(sluice.reloader().reload()).isEqualTo(PolicyReloader.Result.OK);
    }

    private String url(String path) {
        return "https://" + HOST + ":" + origin.httpsPort() + path;
    }

    /** One curl run through Sluice (its own CONNECT tunnel, so its own upstream connection). */
    private CurlResult curl(String path) {
        return Curl.run(List.of("-x", sluice.proxyUrl(), "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                url(path)), Duration.ofSeconds(30));
    }

    private JsonNode audited(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText(null))).reduce((a, b) -> b).orElse(null),
                r -> r != null);
    }

    private boolean originSaw(String path) {
        return !origin.server().findAll(anyRequestedFor(urlEqualTo(path))).isEmpty();
    }

    private String pinsReset() {
        StringWriter out = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(new StringWriter()), "pins", "reset", HOST,
                "--data-dir", sluice.dataDir().toString());
        assertThat(code).as(out.toString()).isZero();
        return out.toString();
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aReloadToAWrongPinRefusesTheVeryNextRequest(String provider) throws Exception {
        String right = SpkiPin.of(origin.tls().caCertificate());
        start(provider, "{ pins: [\"" + right + "\"] }");
        // Two full exchanges under the right pin: the second could resume the first's TLS session.
        for (String path : List.of("/a1", "/a2")) {
            CurlResult ok = curl(path);
            assertThat(ok.httpStatus()).as(ok.stderr()).isEqualTo(200);
            assertThat(audited(path).path("pin").asText()).isEqualTo("ok");
        }

        reloadTo("{ pins: [\"" + WRONG_PIN + "\"] }");
        CurlResult refused = curl("/b");
        assertThat(refused.httpStatus()).isEqualTo(502);
        assertThat(refused.body()).isEqualTo("sluice: pin_mismatch\n");
        JsonNode record = audited("/b");
        assertThat(record.path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(originSaw("/b")).isFalse();

        // And back: the right pin again applies to the next request too.
        reloadTo("{ pins: [\"" + right + "\"] }");
        assertThat(curl("/c").httpStatus()).isEqualTo(200);
        assertThat(audited("/c").path("pin").asText()).isEqualTo("ok");
        // Every one of those upstream handshakes was a full one: no session was resumed.
        assertThat(logLines(ResumableTrust.class, "was resumed")).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aPinsResetOfATofuHostAppliesToTheVeryNextRequest(String provider) throws Exception {
        start(provider, "{ pins: tofu }");
        assertThat(curl("/first").httpStatus()).isEqualTo(200);
        assertThat(audited("/first").path("pin").asText()).isEqualTo("recorded");
        assertThat(curl("/second").httpStatus()).isEqualTo(200);
        assertThat(audited("/second").path("pin").asText()).isEqualTo("ok");
        Path record = sluice.dataDir().resolve("pins").resolve(HOST + ".json");
        assertThat(record).exists();

        // `sluice pins reset` (another process, as an operator runs it): the next chain is recorded anew.
        assertThat(pinsReset()).contains("reset pins of " + HOST);
        assertThat(record).doesNotExist();
        assertThat(curl("/third").httpStatus()).isEqualTo(200);
        assertThat(audited("/third").path("pin").asText()).isEqualTo("recorded");
        assertThat(record).exists();

        // Reset, and the record now names another key (say another Sluice on this data dir recorded a
        // different chain first): the very next request is refused.
        pinsReset();
        PinStore.open(sluice.dataDir()).recordIfAbsent(HOST, List.of(WRONG_PIN));
        CurlResult refused = curl("/fourth");
        assertThat(refused.httpStatus()).isEqualTo(502);
        assertThat(refused.body()).isEqualTo("sluice: pin_mismatch\n");
        assertThat(audited("/fourth").path("reason").asText()).isEqualTo("pin_mismatch");
        assertThat(originSaw("/fourth")).isFalse();
        assertThat(logLines(ResumableTrust.class, "was resumed")).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"openssl", "jdk"})
    void aPinMismatchIsCountedOnceAndLoggedOnce(String provider) throws Exception {
        start(provider, "{ pins: [\"" + WRONG_PIN + "\"] }");
        CurlResult refused = curl("/counted");
        assertThat(refused.httpStatus()).isEqualTo(502);
        assertThat(refused.body()).isEqualTo("sluice: pin_mismatch\n");
        assertThat(audited("/counted").path("reason").asText()).isEqualTo("pin_mismatch");
        // The audit record is written when the exchange ends; the handshake's count came before it.
        assertThat(pinFailures()).isEqualTo(1.0);
        assertThat(logLines(InterceptionTls.class, "pin mismatch for " + HOST)).isEqualTo(1);

        // A second refused request: two in all, not four.
        assertThat(curl("/counted-again").httpStatus()).isEqualTo(502);
        audited("/counted-again");
        assertThat(pinFailures()).isEqualTo(2.0);
        assertThat(logLines(InterceptionTls.class, "pin mismatch for " + HOST)).isEqualTo(2);
    }

    /** Reads {@code sluice_pin_failures_total{host="api.llm.test"}} from the admin listener's /metrics. */
    private double pinFailures() throws Exception {
        HttpClient client = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
        String body = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + sluice.server().adminAddress().getPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Matcher m = Pattern.compile("(?m)^sluice_pin_failures_total\\{host=\"" + Pattern.quote(HOST)
                + "\"[^}]*} ([0-9.eE+]+)$").matcher(body);
        return m.find() ? Double.parseDouble(m.group(1)) : 0.0;
    }
}
