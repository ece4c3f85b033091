package dev.sluice.proxy.http;

import org.jspecify.annotations.Nullable;
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
 * label also in the {@code X-Sluice-Reason} header and an RFC 9209 {@code Proxy-Status} field
 * ({@code sluice; error=http_request_denied; details="not_allowlisted"}, {@link ProxyStatus}). When the
 * request's {@code Accept} prefers {@code application/json} ({@link #prefersJson}), the body is instead
 * {@code {"error","host","extension","rule","event_id","hint"}} ({@link Refused}); the hint says how to
 * get access and names nothing but the asking extension. Never a stack trace, never a request value.
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

    /**
     * What a JSON refusal body says besides the reason; every part may be null (unknown).
     *
     * @param host the target host as canonicalised (never a request value beyond it)
     * @param extension the asking extension (never another one)
     * @param rule the id of the rule that decided
     * @param eventId the audit record's {@code event.id}, to quote to an operator
     * @param accept the request's {@code Accept} field value, or null
     */
    public record Refused(@Nullable String host, @Nullable String extension, @Nullable String rule,
                          @Nullable String eventId, @Nullable String accept) {

        /** The parts of a refusal known to {@code audit}, with {@code rule} and {@code accept}. */
        public static Refused of(dev.sluice.proxy.audit.AuditEvent audit, String rule, @Nullable String accept) {
            return new Refused(audit.serverAddressOrNull(), audit.extensionOrNull(), rule, audit.eventId(), accept);
        }
    }

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
        return refusal(alloc, reason, reasonText, close, null);
    }

    /**
     * Builds the refusal for {@code reason}, as {@link #refusal(ByteBufAllocator, Reason, String, boolean)},
     * with a JSON body when {@code refused} is given and its {@code accept} prefers
     * {@code application/json}.
     *
     * @param refused what the JSON body may say, or null for the text body
     */
    public static FullHttpResponse refusal(ByteBufAllocator alloc, Reason reason, String reasonText, boolean close,
                                           Refused refused) {
        int status = reason.httpStatus();
        if (status == 0) {
            throw new IllegalArgumentException("reason: " + reason + " (expected: one answered with an HTTP status)");
        }
        String oneLine = reasonText.replace('\n', ' ').replace('\r', ' ');
        boolean json = refused != null && prefersJson(refused.accept());
        byte[] line = json ? jsonBody(reason, refused) : ("sluice: " + oneLine + "\n").getBytes(StandardCharsets.UTF_8);
        ByteBuf body = alloc.buffer(line.length).writeBytes(line);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(status), body);
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, json ? "application/json" : "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, line.length)
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_STORE)
                .set(REASON_HEADER, reason.label())
                .set(ProxyStatus.HEADER, ProxyStatus.value(reason, oneLine));
        if (reason == Reason.UNKNOWN_EXTENSION) {
            response.headers().set(HttpHeaderNames.PROXY_AUTHENTICATE, PROXY_CHALLENGE);
        }
        if (close) {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        return response;
    }

    /**
     * Answers whether an {@code Accept} value (RFC 9110 section 12.5.1) prefers JSON to text: the
     * weight it gives {@code application/json} (by the most specific range that names it:
     * {@code application/json}, else {@code application/*}; {@code &#42;/&#42;} alone never counts) is above 0
     * and at least the weight it gives {@code text/plain} (by {@code text/plain}, {@code text/*} or
     * {@code &#42;/&#42;}). Null or unparsable: false.
     */
    public static boolean prefersJson(String accept) {
        if (accept == null || accept.isBlank()) {
            return false;
        }
        double json = -1;
        int jsonSpecificity = -1;
        double text = 0;
        int textSpecificity = -1;
        for (String part : accept.split(",")) {
            String[] params = part.split(";");
            String range = params[0].trim().toLowerCase(java.util.Locale.ROOT);
            double q = 1;
            for (int i = 1; i < params.length; i++) {
                String p = params[i].trim();
                if (p.regionMatches(true, 0, "q=", 0, 2)) {
                    try {
                        q = Double.parseDouble(p.substring(2).trim());
                    } catch (NumberFormatException e) {
                        q = 0;
                    }
                }
            }
            int js = range.equals("application/json") ? 2 : range.equals("application/*") ? 1 : -1;
            if (js > jsonSpecificity) {
                jsonSpecificity = js;
                json = q;
            }
            int ts = range.equals("text/plain") ? 2 : range.equals("text/*") ? 1 : range.equals("*/*") ? 0 : -1;
            if (ts > textSpecificity) {
                textSpecificity = ts;
                text = q;
            }
        }
        return jsonSpecificity >= 1 && json > 0 && json >= text;
    }

    private static byte[] jsonBody(Reason reason, Refused r) {
        StringBuilder b = new StringBuilder("{\"error\":").append(jsonString(reason.label()));
        b.append(",\"host\":").append(jsonString(r.host()));
        b.append(",\"extension\":").append(jsonString(r.extension()));
        b.append(",\"rule\":").append(jsonString(r.rule()));
        b.append(",\"event_id\":").append(jsonString(r.eventId()));
        b.append(",\"hint\":").append(jsonString(hint(reason, r.extension())));
        return b.append("}\n").toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Says how to get access after a refusal for {@code reason}, for a person or an agent to act on. It
     * names only {@code extension} (the asker) and never another extension's rules.
     */
    static String hint(Reason reason, String extension) {
        String ext = extension == null ? "NAME" : extension;
        return switch (reason) {
            case NOT_ALLOWLISTED, PORT_NOT_ALLOWED, METHOD_NOT_ALLOWED, PATH_NOT_ALLOWED -> "This destination is not in "
                    + "the allowlist of extension " + ext + ". Ask the operator to allow it (an approval, or a rule: "
                    + "`sluice audit suggest --extension " + ext + "` proposes the narrowest one from the audit log; "
                    + "quote the event_id).";
            case DENIED_BY_RULE -> "A deny rule of the policy refuses this destination; no allow rule can lift it. "
                    + "Ask the operator if it should be reachable.";
            case ADDRESS_CLASS -> "The destination is (or resolves to) an address Sluice never lets extensions reach "
                    + "(loopback, private, link-local, metadata, ...). Only the operator can open one address with "
                    + "network.allow_private.";
            case SELF_LOOP -> "The destination is Sluice itself; it is never reachable through the proxy.";
            case UNKNOWN_EXTENSION -> "Identify with Proxy-Authorization: Basic <extension>:<token>; "
                    + "`sluice env --extension NAME` prints the proxy variables.";
            case CREDENTIAL_DETECTED, SIGNED_BODY -> "The request carried a credential that must not leave the "
                    + "sandbox; send it without the credential.";
            case MALFORMED_REQUEST, MALFORMED_TARGET, AMBIGUOUS_FRAMING, HEADER_TOO_LARGE, HOST_MISMATCH,
                 UNSUPPORTED_ENCODING, UPGRADE_NOT_SUPPORTED -> "Sluice could not accept this request as sent; fix "
                    + "the request (see the error) and retry.";
            case CREDENTIAL_HOST_MISMATCH -> "The request carried a credential placeholder where it may not go (another "
                    + "host, path or extension, or an encoding of it); send it only where it belongs "
                    + "(docs/credentials.md).";
            case SIGV4_REFUSED -> "Sluice signs this AWS request again only with a signed, whole payload; send it "
                    + "without UNSIGNED-PAYLOAD or streaming signing, and unchanged after signing (docs/credentials.md).";
            case RESPONSE_NOT_SCRUBBABLE -> "The origin answered in a content-coding Sluice cannot read, so could not "
                    + "keep real credentials out of it; the body was not relayed. Retry, and tell the operator if it "
                    + "persists (quote the event_id).";
            case CREDENTIAL_UNAVAILABLE -> "Sluice cannot read the credential this placeholder stands for right now; "
                    + "retry later, and tell the operator if it persists (quote the event_id).";
            case BODY_TOO_LARGE -> "The request body is larger than the policy's limits allow; send less.";
            case EGRESS_BUDGET, CONNECTION_LIMIT -> "Too much at once for extension " + ext + "; retry later.";
            default -> "Sluice or the upstream failed; retry later, and tell the operator if it persists "
                    + "(quote the event_id).";
        };
    }

    private static String jsonString(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** Builds the {@code 200 Connection established} answer to an allowed CONNECT (RFC 9110 section 9.3.6). */
    public static FullHttpResponse connectEstablished(ByteBufAllocator alloc) {
        return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                new HttpResponseStatus(200, "Connection established"), alloc.buffer(0));
    }
}
