package dev.sluice.proxy.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.MalformedTargetException;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The request phase's own parts: the explicit front and the decoder-failure answers, as tables. */
class RequestPartsTest {

    private static final Policy POLICY = load("""
            version: 1
            extensions:
              github:
                auth: { token_sha256: "%s" }
                allow: []
              default:
                allow: []
            limits:
              max_header_bytes: 8192
            """.formatted(sha256("s3cret")));

    private static Policy load(String yaml) {
        try {
            return PolicyLoader.parse(yaml, "test.yaml");
        } catch (Exception e) {
            throw new AssertionError(e.getMessage(), e);
        }
    }

    private static String sha256(String token) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static String basic(String userPass) {
        return "Basic " + Base64.getEncoder().encodeToString(userPass.getBytes(StandardCharsets.UTF_8));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(nullValues = "NONE", value = {
        "no header → default,            NONE,              default",
        "right token,                    github:s3cret,     github",
        "wrong token never falls back,   github:wrong,      NONE",
        "unknown name,                   nobody:s3cret,     NONE",
        "no colon,                       github,            NONE",
    })
    void explicitFrontIdentifiesByProxyAuthorization(String scenario, String userPass, String expected) {
        String header = userPass == null ? null : basic(userPass);
        assertThat(ExplicitFront.identify(POLICY, header).map(e -> e.name()).orElse(null)).as(scenario)
                .isEqualTo(expected);
    }

    @Test
    void explicitFrontIdentityAndTargets() throws Exception {
        ExplicitFront front = new ExplicitFront();
        assertThat(ExplicitFront.identify(POLICY, "Bearer abc")).isEmpty();
        assertThat(ExplicitFront.identify(POLICY, "Basic !!!not-base64")).isEmpty();
        HttpRequest connect = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.CONNECT, "api.example.com:443");
        assertThat(front.opensTunnel(connect)).isTrue();
        assertThat(front.scheme(connect)).isEqualTo("https");
        assertThat(front.tunnelTarget(connect).authority()).isEqualTo("api.example.com:443");
        HttpRequest plain = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "http://EXAMPLE.com./a?b=1");
        assertThat(front.opensTunnel(plain)).isFalse();
        assertThat(front.scheme(plain)).isEqualTo("http");
        assertThat(front.target(plain).target().host()).isEqualTo("example.com");
        assertThatThrownBy(() -> front.target(new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/a")))
                .isInstanceOf(OriginFormException.class);
        assertThatThrownBy(() -> front.target(new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.OPTIONS, "*")))
                .isInstanceOf(OriginFormException.class);
        assertThatThrownBy(() -> front.tunnelTarget(
                new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.CONNECT, "1.2.3.999:443")))
                .isInstanceOf(MalformedTargetException.class);
    }

    /** Request heads as the strict decoder produces them, and what the request phase answers to each. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(nullValues = "NONE", value = {
        "a good request,                       'GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n', NONE, NONE",
        "Content-Length with Transfer-Encoding,'POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n', ambiguous_framing, http.framing",
        "a Transfer-Encoding other than chunked,'POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip\r\n\r\n', malformed_request, http.parse",
        "HTTP/2.0 in an HTTP/1 request line,   'GET http://a.test/ HTTP/2.0\r\nHost: a.test\r\n\r\n', malformed_request, http.parse",
        "a header block over the limit,        'GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX-Big: ${big}\r\n\r\n', header_too_large, limits.max_header_bytes",
        "garbage,                              'NOT HTTP AT ALL\r\n\r\n', malformed_request, http.parse",
    })
    void decoderFailures(String scenario, String head, String reason, String rule) {
        String text = head.replace("${big}", "x".repeat(9000));
        EmbeddedChannel ch = new EmbeddedChannel(dev.sluice.proxy.http.HttpPipeline.newDecoder(POLICY.limits()));
        ch.writeInbound(Unpooled.copiedBuffer(text, StandardCharsets.US_ASCII));
        Object first = ch.readInbound();
        try {
            assertThat(first).as(scenario).isInstanceOf(HttpRequest.class);
            Refusal refusal = DecoderFailures.of((HttpRequest) first, 8192);
            if (reason == null) {
                assertThat(refusal).as(scenario).isNull();
            } else {
                assertThat(refusal).as(scenario).isNotNull();
                assertThat(refusal.decision().reason().label()).as(scenario).isEqualTo(reason);
                assertThat(refusal.decision().ruleId()).as(scenario).isEqualTo(rule);
                assertThat(refusal.close()).as(scenario).isTrue();
            }
        } finally {
            ReferenceCountUtil.release(first);
            for (Object o; (o = ch.readInbound()) != null; ) {
                ReferenceCountUtil.release(o);
            }
            ch.finishAndReleaseAll();
        }
    }
}
