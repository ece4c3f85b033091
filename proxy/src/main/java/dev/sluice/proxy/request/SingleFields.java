package dev.sluice.proxy.request;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One identity or none: fields whose repetition would change what a request means to different
 * readers, checked before anything is decided on them (RFC 9110 section 5.3; RFC 9112 section 3.2).
 * Framing fields ({@code Content-Length}, {@code Transfer-Encoding}) are checked by
 * {@link dev.sluice.proxy.http.StrictRequestDecoder}; this class checks routing and identity:
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

    /**
     * Returns the refusal for {@code headers}, or null when every single field is single.
     *
     * @param headers the request's header fields
     * @param identifiesByProxyAuthorization true on the explicit listener, where Proxy-Authorization
     *     names the extension
     */
    static @Nullable Refusal check(HttpHeaders headers, boolean identifiesByProxyAuthorization) {
        if (identifiesByProxyAuthorization && !single(headers.getAll(HttpHeaderNames.PROXY_AUTHORIZATION))) {
            return new Refusal(Decision.deny(Reason.UNKNOWN_EXTENSION, BuiltinRules.AUTH),
                    "Proxy-Authorization repeated or a list", true);
        }
        if (!single(headers.getAll(HttpHeaderNames.HOST))) {
            return new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE),
                    "Host repeated or a list", true);
        }
        return null;
    }

    /** True when {@code Proxy-Authorization} is absent or one value without a comma: it may name who sent the request. */
    static boolean identitySingle(HttpHeaders headers) {
        return single(headers.getAll(HttpHeaderNames.PROXY_AUTHORIZATION));
    }

    /** True for no value, or one value without a comma. */
    private static boolean single(List<String> values) {
        return values.size() < 2 && (values.isEmpty() || values.get(0).indexOf(',') < 0);
    }
}
