package dev.sluice.proxy.request;

import dev.sluice.proxy.http.StrictRequestDecoder;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import org.jspecify.annotations.Nullable;

/**
 * What the request phase answers to a request head it will not take, before identity or policy matter:
 * the decoder's failures and the framing and version checks (RFC 9112). A pure function of the request
 * head; every refusal here closes the connection (the byte stream can no longer be trusted).
 */
final class DecoderFailures {

    private DecoderFailures() {
    }

    /**
     * Returns the refusal of {@code request}, or null when its head is acceptable:
     * <table>
     *   <caption>Decoder failures and checks</caption>
     *   <tr><td>400 ambiguous_framing</td><td>Content-Length with Transfer-Encoding, Content-Length
     *       repeated or a list, Transfer-Encoding repeated ({@link StrictRequestDecoder})</td></tr>
     *   <tr><td>431 header_too_large</td><td>header block over {@code maxHeaderBytes}</td></tr>
     *   <tr><td>400 malformed_request</td><td>a request line too long, an unparseable head, a version other
     *       than HTTP/1.0 and 1.1, a Transfer-Encoding other than {@code chunked}</td></tr>
     * </table>
     */
    static @Nullable Refusal of(HttpRequest request, int maxHeaderBytes) {
        DecoderResult result = request.decoderResult();
        if (result.isFailure()) {
            Throwable cause = result.cause();
            if (cause instanceof StrictRequestDecoder.AmbiguousFramingException) {
                return new Refusal(Decision.deny(Reason.AMBIGUOUS_FRAMING, BuiltinRules.HTTP_FRAMING),
                        cause.getMessage(), true);
            }
            if (cause instanceof io.netty.handler.codec.http.TooLongHttpHeaderException) {
                return new Refusal(Decision.deny(Reason.HEADER_TOO_LARGE, BuiltinRules.MAX_HEADER_BYTES),
                        "header block over " + maxHeaderBytes + " bytes", true);
            }
            if (cause instanceof io.netty.handler.codec.http.TooLongHttpLineException
                    || cause instanceof TooLongFrameException) {
                return new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE),
                        "request line too long", true);
            }
            return new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE), "unparseable request", true);
        }
        if (!request.protocolVersion().equals(HttpVersion.HTTP_1_1)
                && !request.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
            return new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE),
                    "unsupported HTTP version", true);
        }
        String transferEncoding = request.headers().get(HttpHeaderNames.TRANSFER_ENCODING);
        if (transferEncoding != null && !transferEncoding.trim().equalsIgnoreCase("chunked")) {
            return new Refusal(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_FRAMING),
                    "unsupported Transfer-Encoding", true);
        }
        return null;
    }
}
