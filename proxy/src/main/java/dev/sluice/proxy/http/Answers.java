package dev.sluice.proxy.http;

import dev.sluice.rules.decision.Reason;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * The answers Sluice writes itself. Every refusal is a short {@code text/plain} body of one line,
 * {@code sluice: <reason>\n} (for example {@code sluice: address_class: metadata}), with the reason
 * label also in the {@code X-Sluice-Reason} header. Never a stack trace, never a request value.
 *
 * <table>
 *   <caption>Statuses by reason (design.md "Answers and reasons")</caption>
 *   <tr><th>status</th><th>reasons</th></tr>
 *   <tr><td>400</td><td>malformed_request, malformed_target, ambiguous_framing</td></tr>
 *   <tr><td>403</td><td>not_allowlisted, denied_by_rule, port_not_allowed, method_not_allowed,
 *       path_not_allowed, address_class, self_loop</td></tr>
 *   <tr><td>407</td><td>unknown_extension, with {@code Proxy-Authenticate: Basic realm="sluice"}</td></tr>
 *   <tr><td>431</td><td>header_too_large</td></tr>
 *   <tr><td>501</td><td>upgrade_not_supported</td></tr>
 *   <tr><td>502 / 504</td><td>upstream_connect_failed, upstream_protocol_error, dns_failure / upstream_timeout</td></tr>
 *   <tr><td>503</td><td>connection_limit, audit_unavailable</td></tr>
 * </table>
 */
public final class Answers {

    /** The Proxy-Authenticate challenge sent with 407 (RFC 9110 section 11.7.1, Basic per RFC 7617). */
    public static final String PROXY_CHALLENGE = "Basic realm=\"sluice\", charset=\"UTF-8\"";

    /** Response header carrying the reason label of a refusal. */
    public static final String REASON_HEADER = "X-Sluice-Reason";

    private Answers() {
    }

    /**
     * Builds the refusal for {@code reason}.
     *
     * @param reason the reason; its {@link Reason#httpStatus()} must be non-zero
     * @param reasonText the one-line text (the reason label, possibly with a class, e.g.
     *                   {@code address_class: metadata}); must not contain a newline
     * @param close whether the connection closes after this answer ({@code Connection: close} is set)
     * @return a response whose body the caller owns (write it once)
     */
    public static FullHttpResponse refusal(ByteBufAllocator alloc, Reason reason, String reasonText, boolean close) {
        int status = reason.httpStatus();
        if (status == 0) {
            throw new IllegalArgumentException("reason: " + reason + " (expected: one answered with an HTTP status)");
        }
        byte[] line = ("sluice: " + reasonText.replace('\n', ' ').replace('\r', ' ') + "\n")
                .getBytes(StandardCharsets.UTF_8);
        ByteBuf body = alloc.buffer(line.length).writeBytes(line);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(status), body);
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, line.length)
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_STORE)
                .set(REASON_HEADER, reason.label());
        if (reason == Reason.UNKNOWN_EXTENSION) {
            response.headers().set(HttpHeaderNames.PROXY_AUTHENTICATE, PROXY_CHALLENGE);
        }
        if (close) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return response;
    }

    /** Builds the {@code 200 Connection established} answer to an allowed CONNECT (RFC 9110 section 9.3.6). */
    public static FullHttpResponse connectEstablished(ByteBufAllocator alloc) {
        return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                new HttpResponseStatus(200, "Connection established"), alloc.buffer(0));
    }
}
