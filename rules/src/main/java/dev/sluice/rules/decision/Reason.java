package dev.sluice.rules.decision;

/**
 * Every reason Sluice gives, in one place (design.md "Answers and reasons"). The {@link #label()}
 * appears unchanged in the response body, the audit record's {@code reason} and the metrics label;
 * {@link #httpStatus()} is the status of the answer Sluice sends itself (0 when the answer is a closed
 * connection or a DNS NXDOMAIN rather than an HTTP response).
 */
public enum Reason {
    /** An allow rule matched (the only reason of an allowed decision). */
    ALLOWLISTED("allowlisted", 0),

    MALFORMED_REQUEST("malformed_request", 400),
    MALFORMED_TARGET("malformed_target", 400),
    AMBIGUOUS_FRAMING("ambiguous_framing", 400),

    NOT_ALLOWLISTED("not_allowlisted", 403),
    DENIED_BY_RULE("denied_by_rule", 403),
    PORT_NOT_ALLOWED("port_not_allowed", 403),
    METHOD_NOT_ALLOWED("method_not_allowed", 403),
    PATH_NOT_ALLOWED("path_not_allowed", 403),
    ADDRESS_CLASS("address_class", 403),
    SELF_LOOP("self_loop", 403),
    CREDENTIAL_DETECTED("credential_detected", 403),
    /**
     * A plain HTTP request (absolute-form {@code http://} on the explicit listener, or HTTP on the
     * transparent one) to a host under {@code inspect}: its credential scan, red flags, pins and budgets
     * run on intercepted TLS only, so the request is refused rather than sent on unchecked.
     */
    TLS_REQUIRED("tls_required", 403),
    SIGNED_BODY("signed_body", 403),
    /**
     * A credential placeholder ({@code credentials} in the policy) in a request it may not travel in:
     * to a host, port or path the credential is not bound to, or from an extension that may not use it.
     * The placeholder never reaches an origin.
     */
    CREDENTIAL_HOST_MISMATCH("credential_host_mismatch", 403),
    /**
     * A SigV4 request whose access key id is a placeholder but that Sluice will not sign again: its
     * payload is not signed ({@code UNSIGNED-PAYLOAD} without {@code inject.sigv4_unsigned_payload}, or a
     * {@code STREAMING-*} variant), or its declared {@code x-amz-content-sha256} does not match its body.
     */
    SIGV4_REFUSED("sigv4_refused", 403),
    /** A WebSocket upgrade to an inspected host whose {@code websocket} mode is {@code refuse}. */
    WEBSOCKET_REFUSED("websocket_refused", 403),
    /** A red-flag rule ({@code red_flags}) with {@code action: block} matched the request. */
    RED_FLAG("red_flag", 403),

    UNKNOWN_EXTENSION("unknown_extension", 407),

    BODY_TOO_LARGE("body_too_large", 413),
    UNSUPPORTED_ENCODING("unsupported_encoding", 415),
    HOST_MISMATCH("host_mismatch", 421),
    HEADER_TOO_LARGE("header_too_large", 431),
    /**
     * The request asks for a protocol upgrade ({@code Upgrade}, e.g. WebSocket or h2c; RFC 9110
     * section 7.8), which Sluice does not relay: 501, the functionality the request needs is not
     * implemented by the proxy (RFC 9110 section 15.6.2). Never silently dropped.
     */
    UPGRADE_NOT_SUPPORTED("upgrade_not_supported", 501),

    EGRESS_BUDGET("egress_budget", 429),
    /** The extension spent its {@code limits.token_budget} of LLM tokens in the current window. */
    TOKEN_BUDGET("token_budget", 429),
    CONNECTION_LIMIT("connection_limit", 503),
    /** The audit log cannot be written: Sluice refuses traffic it could not record (fail closed). */
    AUDIT_UNAVAILABLE("audit_unavailable", 503),
    /**
     * The request carries the placeholder of a credential marked {@code optional: true} whose source
     * cannot be read now (or whose cached value expired after a failed refresh).
     */
    CREDENTIAL_UNAVAILABLE("credential_unavailable", 503),
    /**
     * A tunnel to an inspected host whose interception cannot start (no interception material, the
     * client half-closed before its TLS handshake): refused, never relayed blind (fail closed).
     */
    INTERCEPTION_UNAVAILABLE("interception_unavailable", 503),

    PIN_MISMATCH("pin_mismatch", 502),
    UPSTREAM_TLS_FAILED("upstream_tls_failed", 502),
    UPSTREAM_CONNECT_FAILED("upstream_connect_failed", 502),
    /** The parent proxy ({@code upstream_proxy}) answered its CONNECT with 407: its credentials failed. */
    UPSTREAM_PROXY_AUTH("upstream_proxy_auth", 502),
    /**
     * The parent proxy could not be reached, timed out, answered its CONNECT with another status than
     * 200 (the status is in the record's {@code error}), or broke the exchange.
     */
    UPSTREAM_PROXY_FAILED("upstream_proxy_failed", 502),
    /**
     * The origin's answer is not HTTP/1.1 Sluice can relay: a malformed status line or header block, a
     * broken chunked body, a {@code 101} nobody asked for (RFC 9112; RFC 9209's {@code http_protocol_error}).
     */
    UPSTREAM_PROTOCOL_ERROR("upstream_protocol_error", 502),
    /**
     * The origin answered a request whose response Sluice must scrub of real credential values (an
     * intercepted leg of an extension that holds credentials) with a body in a content-coding Sluice
     * cannot read ({@code br}, {@code zstd}, a stacked or unknown coding): the body is never relayed.
     */
    RESPONSE_NOT_SCRUBBABLE("response_not_scrubbable", 502),
    DNS_FAILURE("dns_failure", 502),
    UPSTREAM_TIMEOUT("upstream_timeout", 504),

    SNI_MISMATCH("sni_mismatch", 0),
    NO_SNI("no_sni", 0),
    /**
     * The client's TLS ALPN offer names no protocol Sluice speaks on an intercepted host (h2 only):
     * refused with the TLS alert of that name (RFC 7301 section 3.2).
     */
    NO_APPLICATION_PROTOCOL("no_application_protocol", 0),
    NOT_HTTP_OR_TLS("not_http_or_tls", 0),
    HEADER_TIMEOUT("header_timeout", 0),
    IDLE_TIMEOUT("idle_timeout", 0),

    DNS_NOT_ALLOWLISTED("dns_not_allowlisted", 0);

    private final String label;
    private final int httpStatus;

    Reason(String label, int httpStatus) {
        this.label = label;
        this.httpStatus = httpStatus;
    }

    /** Returns the snake_case word, e.g. {@code not_allowlisted}. */
    public String label() {
        return label;
    }

    /**
     * Answers whether this reason is an upstream failure: the policy let the traffic through and the
     * network or the origin failed it (DNS gave no answer, the dial or the parent proxy failed or timed
     * out, the upstream TLS handshake failed for a reason other than a pin, the origin answered
     * something Sluice cannot relay). Such a record keeps the policy's {@code decision} and says
     * {@code outcome: upstream_failure} (docs/audit.md). {@link #PIN_MISMATCH} is not one: it is the
     * policy's {@code inspect.<host>.pins} refusing the certificate the origin showed, a denial.
     */
    public boolean upstreamFailure() {
        return switch (this) {
            case UPSTREAM_TLS_FAILED, UPSTREAM_CONNECT_FAILED, UPSTREAM_PROXY_AUTH, UPSTREAM_PROXY_FAILED,
                    UPSTREAM_PROTOCOL_ERROR, DNS_FAILURE, UPSTREAM_TIMEOUT -> true;
            default -> false;
        };
    }

    /** Returns the HTTP status Sluice answers with for this reason, or 0 when it answers otherwise. */
    public int httpStatus() {
        return httpStatus;
    }
}
