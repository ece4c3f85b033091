package dev.sluice.rules.decision;

/**
 * The rule ids of Sluice's built-in checks, in one place beside {@link Reason}: a {@link Decision} that no
 * policy rule made names one of these as its {@code ruleId} (the audit record's {@code rule}). Policy
 * rules have ids of their own ({@code extensions.<name>.allow[<i>]}, {@code groups.<name>[<i>]},
 * {@code deny[<i>]}). No handler spells a rule id as a string literal.
 */
public final class BuiltinRules {

    /** Nothing in the policy matched ({@link Reason#NOT_ALLOWLISTED}). */
    public static final String IMPLICIT_DENY = "implicit-deny";
    /** A resolved or literal address is in a denied class ({@link Reason#ADDRESS_CLASS}). */
    public static final String ADDRESS_CLASS = "network.address_class";
    /** An answer is one of Sluice's own listeners ({@link Reason#SELF_LOOP}). */
    public static final String SELF = "network.self";
    /** DNS gave no answer ({@link Reason#DNS_FAILURE}). */
    public static final String DNS = "network.dns";
    /** The DNS responder for transparent sandboxes: a query it does not answer ({@link Reason#DNS_NOT_ALLOWLISTED}). */
    public static final String DNS_QUERY = "dns";
    /** The upstream connection could not be made or timed out. */
    public static final String CONNECT = "network.connect";
    /** The parent proxy of {@code upstream_proxy} failed or refused ({@link Reason#UPSTREAM_PROXY_AUTH}, {@link Reason#UPSTREAM_PROXY_FAILED}). */
    public static final String UPSTREAM_PROXY = "upstream_proxy";
    /** The upstream answered something Sluice will not relay (a malformed head, an unasked-for 101). */
    public static final String UPSTREAM = "network.upstream";
    /** The upstream TLS handshake failed for a reason other than a pin. */
    public static final String UPSTREAM_TLS = "network.tls";
    /** An inspected host's SPKI pins did not match ({@link Reason#PIN_MISMATCH}). */
    public static final String PINS = "inspect.pins";
    /** Interception checks: TLS in the tunnel, SNI, ALPN, interception available. */
    public static final String INSPECT = "inspect";
    /** The {@code Host} of an intercepted request names another host ({@link Reason#HOST_MISMATCH}). */
    public static final String INTERCEPT_HOST = "intercept.host";
    /** Proxy-Authorization named no extension, or a wrong token ({@link Reason#UNKNOWN_EXTENSION}). */
    public static final String AUTH = "auth";
    /** No extension's {@code sources} covers the client address (transparent listener). */
    public static final String SOURCES = "sources";
    /** The request-target or SNI could not be canonicalised ({@link Reason#MALFORMED_TARGET}). */
    public static final String TARGET = "target";
    /** The SNI could not be canonicalised. */
    public static final String TLS_SNI = "tls.sni";
    /** A tunnel's first bytes that start like a TLS ClientHello and then break, end, or exceed the limit. */
    public static final String TLS_CLIENT_HELLO = "tls.client_hello";
    /** The request could not be parsed ({@link Reason#MALFORMED_REQUEST}). */
    public static final String HTTP_PARSE = "http.parse";
    /** Message framing: Content-Length with Transfer-Encoding, bad chunks ({@link Reason#AMBIGUOUS_FRAMING}). */
    public static final String HTTP_FRAMING = "http.framing";
    /** An origin-form request-target on the explicit listener. */
    public static final String HTTP_REQUEST_TARGET = "http.request_target";
    /** An {@code Upgrade} request ({@link Reason#UPGRADE_NOT_SUPPORTED}). */
    public static final String HTTP_UPGRADE = "http.upgrade";
    /** A WebSocket upgrade refused by an intercepted host's {@code websocket} key ({@link Reason#WEBSOCKET_REFUSED}). */
    public static final String INSPECT_WEBSOCKET = "inspect.websocket";
    /** The audit log cannot write ({@link Reason#AUDIT_UNAVAILABLE}). */
    public static final String AUDIT = "audit";
    /** {@code limits.max_header_bytes} ({@link Reason#HEADER_TOO_LARGE}). */
    public static final String MAX_HEADER_BYTES = "limits.max_header_bytes";
    /** {@code limits.max_inspected_body} ({@link Reason#BODY_TOO_LARGE}). */
    public static final String MAX_INSPECTED_BODY = "limits.max_inspected_body";
    /** {@code limits.max_connections_per_extension} ({@link Reason#CONNECTION_LIMIT}). */
    public static final String MAX_CONNECTIONS = "limits.max_connections_per_extension";
    /** {@code limits.egress_budget} ({@link Reason#EGRESS_BUDGET}). */
    public static final String EGRESS_BUDGET = "limits.egress_budget";
    /** {@code limits.token_budget} ({@link Reason#TOKEN_BUDGET}). */
    public static final String TOKEN_BUDGET = "limits.token_budget";
    /** {@code limits.header_timeout} ({@link Reason#HEADER_TIMEOUT}). */
    public static final String HEADER_TIMEOUT = "limits.header_timeout";
    /** {@code limits.idle_timeout} ({@link Reason#IDLE_TIMEOUT}). */
    public static final String IDLE_TIMEOUT = "limits.idle_timeout";

    /** A credential detector found a secret in an inspected body ({@link Reason#CREDENTIAL_DETECTED}, {@link Reason#SIGNED_BODY}). */
    public static final String REDACTION = "redaction";
    /** A body whose {@code Content-Encoding} the redactor cannot undo (415 {@code unsupported_encoding}). */
    public static final String REDACTION_ENCODING = "redaction.encoding";

    /** Returns the rule id of an approval granted for {@code scope} ({@code once}, {@code session}, {@code always}): {@code approval.<scope>}. */
    public static String approval(String scope) {
        return "approval." + scope;
    }

    /** Returns the rule id of the red-flag rule {@code id} ({@link Reason#RED_FLAG}): {@code red_flags.<id>}. */
    public static String redFlag(String id) {
        return "red_flags." + id;
    }

    /** Refusals of the credential phase that concern no one credential (an encoding it cannot undo, a
     *  malformed placeholder, a response it cannot scrub). */
    public static final String CREDENTIALS = "credentials";
    /** Refusals by the transparent listener's first-bytes phase (neither TLS nor HTTP, cut, timed out). */
    public static final String TRANSPARENT_PEEK = "transparent.peek";

    /** Returns the rule id of a refusal over the credential {@code name}'s placeholder: {@code credentials.<name>}. */
    public static String credential(String name) {
        return "credentials." + name;
    }

    private BuiltinRules() {
    }
}
