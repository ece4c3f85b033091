package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.decision.Decision;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Response framing toward the client (RFC 9112 sections 6 and 9.3) as a table, and upstream failure classes. */
class ResponseFramingTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        // scenario,                               version,  method, status, chunked, length, keepAlive, chunk, unchunk, close, reusable
        "content-length to 1.1,                    HTTP/1.1, GET,    200,    false,   true,   true,      false, false,   false, true",
        "chunked to 1.1,                           HTTP/1.1, GET,    200,    true,    false,  true,      false, false,   false, true",
        "close-delimited to 1.1 is re-chunked,     HTTP/1.1, GET,    200,    false,   false,  false,     true,  false,   false, false",
        "close-delimited to 1.0 closes,            HTTP/1.0, GET,    200,    false,   false,  false,     false, false,   true,  false",
        "chunked to 1.0 is delimited by close,     HTTP/1.0, GET,    200,    true,    false,  true,      false, true,    true,  true",
        "HEAD has no body,                         HTTP/1.1, HEAD,   200,    false,   false,  true,      false, false,   false, true",
        "204 has no body,                          HTTP/1.1, POST,   204,    false,   false,  true,      false, false,   false, true",
        "304 has no body,                          HTTP/1.0, GET,    304,    false,   false,  true,      false, false,   false, true",
        "origin closes after a length-framed body, HTTP/1.1, GET,    200,    false,   true,   false,     false, false,   false, false",
    })
    void framing(String scenario, String version, String method, int status, boolean chunked, boolean length,
                 boolean keepAlive, boolean chunk, boolean unchunk, boolean close, boolean reusable) {
        ResponseFraming f = ResponseFraming.of(HttpVersion.valueOf(version), HttpMethod.valueOf(method), status, chunked,
                length, keepAlive);
        assertThat(f).as(scenario).isEqualTo(new ResponseFraming(chunk, unchunk, close, reusable));
    }

    @Test
    void upstreamFailuresAreClassified() {
        Decision tls = UpstreamFailures.classify(new IOException("x", new SSLHandshakeException("bad cert")));
        assertThat(tls.reason().label()).isEqualTo("upstream_tls_failed");
        assertThat(tls.ruleId()).isEqualTo("network.tls");
        assertThat(UpstreamFailures.classify(new IOException("reset")).reason().label())
                .isEqualTo("upstream_connect_failed");
        assertThat(UpstreamFailures.classify(null).reason().label()).isEqualTo("upstream_connect_failed");
        assertThat(UpstreamFailures.classify(null).reason().httpStatus()).isEqualTo(502);
    }
}
