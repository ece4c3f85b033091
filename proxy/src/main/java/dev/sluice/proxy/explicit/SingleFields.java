package dev.sluice.proxy.explicit;

import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.List;
import java.util.Optional;

/**
 * One identity or none: fields whose repetition would change what a request means to different
 * readers, checked before anything is decided on them (RFC 9110 section 5.3; RFC 9112 section 3.2).
 * Framing fields ({@code Content-Length}, {@code Transfer-Encoding}) are checked by
 * {@link StrictRequestDecoder}; this class checks routing and identity:
 * <table>
 *   <caption>Refusals</caption>
 *   <tr><td>{@code Proxy-Authorization} twice, or a list value (a comma: Basic credentials never
 *       hold one)</td><td>407 {@code unknown_extension}: the request authenticates as none of them
 *       and never falls back to {@code default}</td></tr>
 *   <tr><td>{@code Host} twice, or a list value</td><td>400 {@code malformed_request}</td></tr>
 * </table>
 */
final class SingleFields {

    private SingleFields() {
    }

    /** A refusal and the short detail for its audit record. */
    record Refusal(Decision decision, String detail) {
    }

    /**
     * Returns the refusal for {@code headers}, or empty when every single field is single.
     *
     * @param headers the request's header fields
     * @param identifiesByProxyAuthorization true on the explicit listener, where Proxy-Authorization
     *     names the extension
     */
    static Optional<Refusal> check(HttpHeaders headers, boolean identifiesByProxyAuthorization) {
        if (identifiesByProxyAuthorization && !single(headers.getAll(HttpHeaderNames.PROXY_AUTHORIZATION))) {
            return Optional.of(new Refusal(Decision.deny(Reason.UNKNOWN_EXTENSION, "auth"),
                    "Proxy-Authorization repeated or a list"));
        }
        if (!single(headers.getAll(HttpHeaderNames.HOST))) {
            return Optional.of(new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, "http.parse"),
                    "Host repeated or a list"));
        }
        return Optional.empty();
    }

    /** True for no value, or one value without a comma. */
    private static boolean single(List<String> values) {
        return values.size() < 2 && (values.isEmpty() || values.get(0).indexOf(',') < 0);
    }
}
