package dev.sluice.proxy.http;

import org.jspecify.annotations.Nullable;
import dev.sluice.rules.decision.Reason;

/**
 * The {@code Proxy-Status} response field of RFC 9209 on every refusal Sluice answers itself:
 * {@code Proxy-Status: sluice; error=<type>; details="<reason text>"}. The error type is the closest of
 * RFC 9209 section 2.3's registry for each {@link Reason}; {@link #errorType} is the one table (an
 * exhaustive switch: a new reason does not compile until it is mapped). docs/architecture.md
 * "Refusals" lists it.
 */
public final class ProxyStatus {

    /** The field name (RFC 9209 section 2). */
    public static final String HEADER = "Proxy-Status";
    /** This intermediary's name in the field: an sf-token (RFC 8941 section 3.3.4). */
    public static final String PROXY_NAME = "sluice";

    private ProxyStatus() {
    }

    /**
     * Returns the RFC 9209 error type closest to {@code reason}, or null for {@link Reason#ALLOWLISTED}
     * (not an error). Reasons answered by closing a connection are mapped too, for completeness.
     */
    public static @Nullable String errorType(Reason reason) {
        return switch (reason) {
            case ALLOWLISTED -> null;
            // The request itself is unusable.
            case MALFORMED_REQUEST, MALFORMED_TARGET, AMBIGUOUS_FRAMING, UNSUPPORTED_ENCODING, HOST_MISMATCH,
                 HEADER_TOO_LARGE, SNI_MISMATCH, NO_SNI, NOT_HTTP_OR_TLS, NO_APPLICATION_PROTOCOL -> "http_request_error";
            // Refused by policy: allowlist, deny rules, credentials, limits, identity.
            case NOT_ALLOWLISTED, DENIED_BY_RULE, PORT_NOT_ALLOWED, METHOD_NOT_ALLOWED, PATH_NOT_ALLOWED,
                 CREDENTIAL_DETECTED, SIGNED_BODY, UNKNOWN_EXTENSION, BODY_TOO_LARGE, EGRESS_BUDGET,
                 DNS_NOT_ALLOWLISTED, CREDENTIAL_HOST_MISMATCH, SIGV4_REFUSED, WEBSOCKET_REFUSED, RED_FLAG,
                 TOKEN_BUDGET, TLS_REQUIRED -> "http_request_denied";
            case ADDRESS_CLASS -> "destination_ip_prohibited";
            case SELF_LOOP -> "proxy_loop_detected";
            case CONNECTION_LIMIT -> "connection_limit_reached";
            case AUDIT_UNAVAILABLE, INTERCEPTION_UNAVAILABLE, CREDENTIAL_UNAVAILABLE -> "proxy_internal_error";
            case UPGRADE_NOT_SUPPORTED -> "http_upgrade_failed";
            case PIN_MISMATCH -> "tls_certificate_error";
            case UPSTREAM_TLS_FAILED -> "tls_protocol_error";
            case UPSTREAM_CONNECT_FAILED -> "connection_refused";
            case UPSTREAM_PROTOCOL_ERROR, RESPONSE_NOT_SCRUBBABLE -> "http_protocol_error";
            case DNS_FAILURE -> "dns_error";
            case UPSTREAM_TIMEOUT -> "connection_timeout";
            case HEADER_TIMEOUT, IDLE_TIMEOUT -> "connection_read_timeout";
            // The parent proxy (upstream_proxy): its credentials are the operator's configuration.
            case UPSTREAM_PROXY_AUTH -> "proxy_configuration_error";
            case UPSTREAM_PROXY_FAILED -> "destination_unavailable";
        };
    }

    /**
     * Returns the field value for a refusal: {@code sluice; error=<type>; details="<text>"}, the text
     * as an sf-string (RFC 8941 section 3.3.3: printable ASCII, {@code "} and {@code \} escaped, anything
     * else replaced by {@code ?}).
     */
    public static String value(Reason reason, String reasonText) {
        String type = errorType(reason);
        StringBuilder b = new StringBuilder(PROXY_NAME);
        if (type != null) {
            b.append("; error=").append(type);
        }
        b.append("; details=\"");
        for (int i = 0; i < reasonText.length(); i++) {
            char c = reasonText.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                b.append('?');
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
