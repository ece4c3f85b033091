package dev.sluice.proxy.audit;

import java.util.List;

/**
 * The field names of an audit record, in the order they are written (design.md "Audit record").
 * Names follow the OpenTelemetry semantic conventions where one exists; every other class refers to
 * these constants rather than spelling a name itself.
 */
public final class AuditFields {

    /** RFC 3339 UTC timestamp with milliseconds, e.g. {@code 2026-11-30T09:31:02.123Z}. */
    public static final String TIME = "time";
    /** Random id of this record (16 lowercase hex characters). */
    public static final String EVENT_ID = "event.id";
    /** The extension the downstream client was identified as. */
    public static final String EXTENSION = "extension";
    /** The downstream client's IP address. */
    public static final String CLIENT_ADDRESS = "client.address";
    /** The downstream client's TCP port. */
    public static final String CLIENT_PORT = "client.port";
    /** {@code explicit} or {@code transparent}. */
    public static final String LISTENER = "listener";
    /** The HTTP method, or {@code CONNECT}. */
    public static final String HTTP_REQUEST_METHOD = "http.request.method";
    /** {@code http} or {@code https}. */
    public static final String URL_SCHEME = "url.scheme";
    /** The canonical upstream host name or address literal. */
    public static final String SERVER_ADDRESS = "server.address";
    /** The upstream TCP port. */
    public static final String SERVER_PORT = "server.port";
    /** The request path with query values masked. */
    public static final String URL_PATH = "url.path";
    /** {@code none}, {@code tunnel} or {@code intercept}. */
    public static final String TLS_MODE = "tls.mode";
    /** The SNI of the downstream ClientHello. */
    public static final String TLS_SNI = "tls.sni";
    /** {@code allow}, {@code deny} or {@code would_deny}. */
    public static final String DECISION = "decision";
    /** {@code upstream_failure} when the policy let the exchange through and the network or origin failed it (502/504); absent otherwise. */
    public static final String OUTCOME = "outcome";
    /** One word of the fixed reason set (design.md "Answers and reasons"). */
    public static final String REASON = "reason";
    /** The id of the rule that decided. */
    public static final String RULE = "rule";
    /** The upstream address actually dialled. */
    public static final String NETWORK_PEER_ADDRESS = "network.peer.address";
    /** The HTTP status sent to the downstream client. */
    public static final String HTTP_RESPONSE_STATUS_CODE = "http.response.status_code";
    /** Bytes sent toward the internet (egress). */
    public static final String BYTES_SENT = "bytes.sent";
    /** Bytes received from the internet (ingress). */
    public static final String BYTES_RECEIVED = "bytes.received";
    /** Wall duration of the connection or exchange, in milliseconds. */
    public static final String DURATION_MS = "duration_ms";
    /** Object: detector id to number of redactions. */
    public static final String REDACTIONS = "redactions";
    /** {@code ok}, {@code mismatch}, {@code recorded} or {@code none}. */
    public static final String PIN = "pin";

    /**
     * The application protocol of an intercepted exchange's upstream leg, as ALPN names it: {@code h2}
     * (the origin chose HTTP/2) or {@code http/1.1}.
     */
    public static final String UPSTREAM_PROTOCOL = "upstream.protocol";
    /** A short one-line error description. */
    public static final String ERROR = "error";
    /** For an {@code address_class} denial: the class of the answer ({@code metadata}, {@code loopback}, ...). */
    public static final String ADDRESS_CLASS = "address_class";
    /** {@code granted}, {@code denied} or {@code timeout}: the outcome of holding a request for approval. */
    public static final String APPROVAL = "approval";
    /** Who answered the approval question (as the backend says), or {@code session} for a session grant. */
    public static final String APPROVAL_BY = "approval.by";
    /** The scope an approval granted: {@code once}, {@code session} or {@code always}. */
    public static final String APPROVAL_SCOPE = "approval.scope";
    /** The names of the credentials Sluice injected into this request (policy {@code credentials}), sorted. */
    public static final String CREDENTIALS = "credentials";
    /** For an upgraded WebSocket connection: {@code plain}, {@code relay} or {@code inspect}. */
    public static final String WEBSOCKET_MODE = "websocket.mode";
    /** WebSocket messages (not frames) from the client toward the internet. */
    public static final String WEBSOCKET_MESSAGES_SENT = "websocket.messages_sent";
    /** WebSocket messages (not frames) from the internet toward the client. */
    public static final String WEBSOCKET_MESSAGES_RECEIVED = "websocket.messages_received";
    /** The model an LLM response names (OpenTelemetry GenAI {@code gen_ai.response.model}). */
    public static final String LLM_MODEL = "llm.model";
    /** Input (prompt) tokens an LLM response reports (OpenTelemetry GenAI {@code gen_ai.usage.input_tokens}). */
    public static final String LLM_INPUT_TOKENS = "llm.usage.input_tokens";
    /** Output (completion) tokens an LLM response reports (OpenTelemetry GenAI {@code gen_ai.usage.output_tokens}). */
    public static final String LLM_OUTPUT_TOKENS = "llm.usage.output_tokens";
    /** Red-flag rule id to count of matches in this exchange (policy {@code red_flags}). */
    public static final String RED_FLAGS = "red_flags";
    /** {@code true} when this exchange was sampled for capture (policy {@code capture}): see {@code sluice audit show}. */
    public static final String CAPTURE = "capture";

    /**
     * Lowercase hex SHA-256 of the previous line's exact bytes (without its newline); 64 zeros on the
     * first line of a new log. Always the last field of a line, added by the {@link AuditLog} writer,
     * not by {@link AuditRecord} (see {@link AuditChain}).
     */
    public static final String PREV_HASH = "prev_hash";

    /** Every field name of a record, in the order a record writes them ({@link #PREV_HASH} not included). */
    public static final List<String> ALL = List.of(
            TIME, EVENT_ID, EXTENSION, CLIENT_ADDRESS, CLIENT_PORT, LISTENER, HTTP_REQUEST_METHOD,
            URL_SCHEME, SERVER_ADDRESS, SERVER_PORT, URL_PATH, TLS_MODE, TLS_SNI, DECISION, OUTCOME, REASON, ADDRESS_CLASS, RULE,
            NETWORK_PEER_ADDRESS, HTTP_RESPONSE_STATUS_CODE, BYTES_SENT, BYTES_RECEIVED, DURATION_MS,
            REDACTIONS, PIN, UPSTREAM_PROTOCOL, APPROVAL, APPROVAL_BY, APPROVAL_SCOPE, CREDENTIALS, WEBSOCKET_MODE,
            WEBSOCKET_MESSAGES_SENT, WEBSOCKET_MESSAGES_RECEIVED, LLM_MODEL, LLM_INPUT_TOKENS, LLM_OUTPUT_TOKENS,
            RED_FLAGS, CAPTURE, ERROR);

    /** Every field name of an audit log line, in order: {@link #ALL}, then {@link #PREV_HASH}. */
    public static final List<String> LINE = java.util.stream.Stream
            .concat(ALL.stream(), java.util.stream.Stream.of(PREV_HASH)).toList();

    private AuditFields() {
    }
}
