package dev.sluice.proxy.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.jspecify.annotations.Nullable;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One audit line: the immutable record of one connection or one request (design.md "Audit record").
 *
 * <p>Serialised as one JSON object on one line (JSON Lines), with flat dotted keys from
 * {@link AuditFields} in that order. Components documented as nullable are omitted from the JSON when
 * null; {@code bytes.sent}, {@code bytes.received} and {@code duration_ms} are always written.
 * {@code time} is RFC 3339 in UTC with millisecond precision, e.g. {@code 2026-11-30T09:31:02.123Z}.
 *
 * <p>A record holds no credentials, header values or bodies; {@code urlPath} is expected to be masked
 * already (see {@link AuditEvent#urlPath(String)}).
 *
 * @param time when the connection or exchange started; non-null
 * @param eventId random id of this record; non-null
 * @param extension the identified extension; nullable
 * @param clientAddress downstream IP address; nullable
 * @param clientPort downstream TCP port; nullable
 * @param listener {@code explicit} or {@code transparent}; nullable
 * @param method HTTP method or {@code CONNECT}; nullable
 * @param urlScheme {@code http} or {@code https}; nullable
 * @param serverAddress canonical upstream host; nullable
 * @param serverPort upstream TCP port; nullable
 * @param urlPath request path with query values masked; nullable
 * @param tlsMode {@code none}, {@code tunnel} or {@code intercept}; nullable
 * @param tlsSni SNI from the ClientHello; nullable
 * @param decision {@code allow}, {@code deny} or {@code would_deny}; nullable
 * @param reason a reason word; nullable
 * @param rule id of the deciding rule; nullable
 * @param peerAddress the upstream address dialled; nullable
 * @param statusCode HTTP status sent downstream; nullable
 * @param bytesSent bytes toward the internet (egress), {@code >= 0}
 * @param bytesReceived bytes from the internet (ingress), {@code >= 0}
 * @param durationMs duration in milliseconds, {@code >= 0}
 * @param redactions detector id to count; null or empty is omitted; copied, unmodifiable, sorted by id
 * @param pin {@code ok}, {@code mismatch}, {@code recorded} or {@code none}; nullable
 * @param upstreamProtocol (last component) {@code h2} or {@code http/1.1}: the upstream leg of an
 *     intercepted exchange; nullable
 * @param error short one-line error; nullable
 * @param addressClass for an {@code address_class} denial, the class ({@code metadata}, {@code loopback}, ...);
 *     nullable
 * @param approval {@code granted}, {@code denied} or {@code timeout} when the request was held; nullable
 * @param approvalBy who answered; nullable
 * @param approvalScope the scope granted; nullable
 * @param credentials names of the credentials injected into the request; null or empty is omitted; copied,
 *     unmodifiable, sorted, distinct
 * @param websocketMode {@code plain}, {@code relay} or {@code inspect} for an upgraded WebSocket; nullable
 * @param websocketMessagesSent WebSocket messages client to internet; nullable (not a WebSocket, or not parsed)
 * @param websocketMessagesReceived WebSocket messages internet to client; nullable
 * @param llmModel the model an LLM response named; nullable
 * @param llmInputTokens input tokens an LLM response reported, {@code >= 0}; nullable
 * @param llmOutputTokens output tokens an LLM response reported, {@code >= 0}; nullable
 * @param redFlags red-flag rule id to count; null or empty is omitted; copied, unmodifiable, sorted by id
 * @param capture true when the exchange was sampled for capture (policy {@code capture}); null or false is omitted
 * @param outcome {@code upstream_failure} when the policy let the exchange through and the network or the
 *     origin failed it ({@link Outcome}); nullable (the exchange went as decided)
 */
public record AuditRecord(
        Instant time,
        String eventId,
        @Nullable String extension,
        @Nullable String clientAddress,
        @Nullable Integer clientPort,
        @Nullable String listener,
        @Nullable String method,
        @Nullable String urlScheme,
        @Nullable String serverAddress,
        @Nullable Integer serverPort,
        @Nullable String urlPath,
        @Nullable String tlsMode,
        @Nullable String tlsSni,
        @Nullable String decision,
        @Nullable String reason,
        @Nullable String rule,
        @Nullable String peerAddress,
        @Nullable Integer statusCode,
        long bytesSent,
        long bytesReceived,
        long durationMs,
        @Nullable Map<String, Long> redactions,
        @Nullable String pin,
        @Nullable String error,
        @Nullable String addressClass,
        @Nullable String approval,
        @Nullable String approvalBy,
        @Nullable String approvalScope,
        @Nullable List<String> credentials,
        @Nullable String websocketMode,
        @Nullable Long websocketMessagesSent,
        @Nullable Long websocketMessagesReceived,
        @Nullable String llmModel,
        @Nullable Long llmInputTokens,
        @Nullable Long llmOutputTokens,
        @Nullable Map<String, Long> redFlags,
        @Nullable Boolean capture,
        @Nullable String upstreamProtocol,
        @Nullable String outcome) {

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private static final DateTimeFormatter RFC3339_MILLIS =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /** A record without {@code capture}, {@code upstream.protocol} and {@code outcome}. */
    public AuditRecord(Instant time, String eventId, String extension, String clientAddress, Integer clientPort,
                       String listener, String method, String scheme, String serverAddress, Integer serverPort,
                       String urlPath, String tlsMode, String tlsSni, String decision, String reason, String rule,
                       String peerAddress, Integer statusCode, long bytesSent, long bytesReceived, long durationMs,
                       Map<String, Long> redactions, String pin, String error, String addressClass, String approval,
                       String approvalBy, String approvalScope, List<String> credentials, String websocketMode,
                       Long websocketMessagesSent, Long websocketMessagesReceived, String llmModel,
                       Long llmInputTokens, Long llmOutputTokens, Map<String, Long> redFlags) {
        this(time, eventId, extension, clientAddress, clientPort, listener, method, scheme, serverAddress, serverPort,
                urlPath, tlsMode, tlsSni, decision, reason, rule, peerAddress, statusCode, bytesSent, bytesReceived,
                durationMs, redactions, pin, error, addressClass, approval, approvalBy, approvalScope, credentials,
                websocketMode, websocketMessagesSent, websocketMessagesReceived, llmModel, llmInputTokens,
                llmOutputTokens, redFlags, null, null, null);
    }

    /** Validates and normalises: {@code redactions}, {@code credentials} and {@code redFlags} are copied (null when empty). */
    public AuditRecord {
        Objects.requireNonNull(time, "time");
        Objects.requireNonNull(eventId, "eventId");
        if (bytesSent < 0) {
            throw new IllegalArgumentException("bytesSent: " + bytesSent + " (expected: >= 0)");
        }
        if (bytesReceived < 0) {
            throw new IllegalArgumentException("bytesReceived: " + bytesReceived + " (expected: >= 0)");
        }
        if (durationMs < 0) {
            throw new IllegalArgumentException("durationMs: " + durationMs + " (expected: >= 0)");
        }
        if (redactions != null && redactions.values().stream().anyMatch(Objects::isNull)) {
            throw new IllegalArgumentException("redactions: " + redactions + " (expected: non-null counts)");
        }
        redactions = redactions == null || redactions.isEmpty()
                ? null
                : Collections.unmodifiableMap(new TreeMap<>(redactions));
        if (redFlags != null && redFlags.values().stream().anyMatch(Objects::isNull)) {
            throw new IllegalArgumentException("redFlags: " + redFlags + " (expected: non-null counts)");
        }
        redFlags = redFlags == null || redFlags.isEmpty()
                ? null
                : Collections.unmodifiableMap(new TreeMap<>(redFlags));
        credentials = credentials == null || credentials.isEmpty()
                ? null
                : List.copyOf(new TreeSet<>(credentials));
        capture = Boolean.TRUE.equals(capture) ? Boolean.TRUE : null;
        for (Long n : new Long[] {websocketMessagesSent, websocketMessagesReceived, llmInputTokens, llmOutputTokens}) {
            if (n != null && n < 0) {
                throw new IllegalArgumentException("count: " + n + " (expected: >= 0)");
            }
        }
    }


    /** A record of a request that was held for approval or not, without second-wave fields. */
    public AuditRecord(Instant time, String eventId, String extension, String clientAddress, Integer clientPort,
                       String listener, String method, String urlScheme, String serverAddress, Integer serverPort,
                       String urlPath, String tlsMode, String tlsSni, String decision, String reason, String rule,
                       String peerAddress, Integer statusCode, long bytesSent, long bytesReceived, long durationMs,
                       Map<String, Long> redactions, String pin, String error, String addressClass,
                       String approval, String approvalBy, String approvalScope) {
        this(time, eventId, extension, clientAddress, clientPort, listener, method, urlScheme, serverAddress,
                serverPort, urlPath, tlsMode, tlsSni, decision, reason, rule, peerAddress, statusCode, bytesSent,
                bytesReceived, durationMs, redactions, pin, error, addressClass, approval, approvalBy, approvalScope,
                null, null, null, null, null, null, null, null);
    }

    /** A record of a request that was not held for approval. */
    public AuditRecord(Instant time, String eventId, String extension, String clientAddress, Integer clientPort,
                       String listener, String method, String urlScheme, String serverAddress, Integer serverPort,
                       String urlPath, String tlsMode, String tlsSni, String decision, String reason, String rule,
                       String peerAddress, Integer statusCode, long bytesSent, long bytesReceived, long durationMs,
                       Map<String, Long> redactions, String pin, String error, String addressClass) {
        this(time, eventId, extension, clientAddress, clientPort, listener, method, urlScheme, serverAddress,
                serverPort, urlPath, tlsMode, tlsSni, decision, reason, rule, peerAddress, statusCode, bytesSent,
                bytesReceived, durationMs, redactions, pin, error, addressClass, null, null, null);
    }

    /** Formats an instant as RFC 3339 UTC with milliseconds, e.g. {@code 2026-11-30T09:31:02.123Z}. */
    public static String formatTime(Instant instant) {
        return RFC3339_MILLIS.format(instant);
    }

    /**
     * Writes this record as one JSON object (no trailing newline) to {@code out}, fields in
     * {@link AuditFields#ALL} order, null fields omitted.
     *
     * @throws IOException if the generator fails to write
     */
    public void writeJson(JsonGenerator out) throws IOException {
        writeJson(out, null);
    }

    /**
     * Writes this record as one JSON object like {@link #writeJson(JsonGenerator)}, with
     * {@code prev_hash} as the last field when {@code prevHash} is non-null (the audit log's chain,
     * see {@link AuditChain}).
     */
    void writeJson(JsonGenerator out, String prevHash) throws IOException {
        out.writeStartObject();
        out.writeStringField(AuditFields.TIME, formatTime(time));
        out.writeStringField(AuditFields.EVENT_ID, eventId);
        string(out, AuditFields.EXTENSION, extension);
        string(out, AuditFields.CLIENT_ADDRESS, clientAddress);
        number(out, AuditFields.CLIENT_PORT, clientPort);
        string(out, AuditFields.LISTENER, listener);
        string(out, AuditFields.HTTP_REQUEST_METHOD, method);
        string(out, AuditFields.URL_SCHEME, urlScheme);
        string(out, AuditFields.SERVER_ADDRESS, serverAddress);
        number(out, AuditFields.SERVER_PORT, serverPort);
        string(out, AuditFields.URL_PATH, urlPath);
        string(out, AuditFields.TLS_MODE, tlsMode);
        string(out, AuditFields.TLS_SNI, tlsSni);
        string(out, AuditFields.DECISION, decision);
        string(out, AuditFields.OUTCOME, outcome);
        string(out, AuditFields.REASON, reason);
        string(out, AuditFields.ADDRESS_CLASS, addressClass);
        string(out, AuditFields.RULE, rule);
        string(out, AuditFields.NETWORK_PEER_ADDRESS, peerAddress);
        number(out, AuditFields.HTTP_RESPONSE_STATUS_CODE, statusCode);
        out.writeNumberField(AuditFields.BYTES_SENT, bytesSent);
        out.writeNumberField(AuditFields.BYTES_RECEIVED, bytesReceived);
        out.writeNumberField(AuditFields.DURATION_MS, durationMs);
        if (redactions != null) {
            out.writeObjectFieldStart(AuditFields.REDACTIONS);
            for (Map.Entry<String, Long> e : redactions.entrySet()) {
                out.writeNumberField(e.getKey(), e.getValue());
            }
            out.writeEndObject();
        }
        string(out, AuditFields.PIN, pin);
        string(out, AuditFields.UPSTREAM_PROTOCOL, upstreamProtocol);
        string(out, AuditFields.APPROVAL, approval);
        string(out, AuditFields.APPROVAL_BY, approvalBy);
        string(out, AuditFields.APPROVAL_SCOPE, approvalScope);
        if (credentials != null) {
            out.writeArrayFieldStart(AuditFields.CREDENTIALS);
            for (String name : credentials) {
                out.writeString(name);
            }
            out.writeEndArray();
        }
        string(out, AuditFields.WEBSOCKET_MODE, websocketMode);
        longNumber(out, AuditFields.WEBSOCKET_MESSAGES_SENT, websocketMessagesSent);
        longNumber(out, AuditFields.WEBSOCKET_MESSAGES_RECEIVED, websocketMessagesReceived);
        string(out, AuditFields.LLM_MODEL, llmModel);
        longNumber(out, AuditFields.LLM_INPUT_TOKENS, llmInputTokens);
        longNumber(out, AuditFields.LLM_OUTPUT_TOKENS, llmOutputTokens);
        if (redFlags != null) {
            out.writeObjectFieldStart(AuditFields.RED_FLAGS);
            for (Map.Entry<String, Long> e : redFlags.entrySet()) {
                out.writeNumberField(e.getKey(), e.getValue());
            }
            out.writeEndObject();
        }
        if (capture != null) {
            out.writeBooleanField(AuditFields.CAPTURE, true);
        }
        string(out, AuditFields.ERROR, error);
        string(out, AuditFields.PREV_HASH, prevHash);
        out.writeEndObject();
    }

    /** Returns this record as one line of JSON, without a trailing newline. */
    public String toJson() {
        StringWriter w = new StringWriter(256);
        try (JsonGenerator g = JSON.createGenerator(w)) {
            writeJson(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringWriter does not fail
        }
        return w.toString();
    }

    /** Returns {@link #toJson()}; a record holds nothing that must be masked. */
    @Override
    public String toString() {
        return toJson();
    }

    private static void string(JsonGenerator out, String name, @Nullable String value) throws IOException {
        if (value != null) {
            out.writeStringField(name, value);
        }
    }

    private static void longNumber(JsonGenerator out, String name, @Nullable Long value) throws IOException {
        if (value != null) {
            out.writeNumberField(name, value.longValue());
        }
    }

    private static void number(JsonGenerator out, String name, @Nullable Integer value) throws IOException {
        if (value != null) {
            out.writeNumberField(name, value.intValue());
        }
    }
}
