package dev.sluice.proxy.capture;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;

/**
 * One captured exchange (policy {@code capture}), filled in on the event loop as it streams and handed
 * to the {@link CaptureStore} once, when the response ends or the exchange is over. The request body
 * is the one sent upstream after redaction and before credential injection; the response body is
 * the one the origin sent, its content-encoding undone. Both are cut at {@code max_body_bytes}.
 *
 * <p>Written as one JSON object (docs/audit.md "Captures"):
 * <pre>
 * {"event.id": ..., "time": ..., "extension": ..., "server.address": ..., "server.port": ...,
 *  "http.request.method": ..., "url.path": ...,        (query values masked, as in the audit record)
 *  "request":  {"content_type", "content_encoding", "body" | "body_base64", "body_bytes", "truncated", "note"},
 *  "response": {"status_code", "content_type", "content_encoding", "body" | "body_base64", "body_bytes",
 *               "truncated", "complete", "events": [{"event", "data"}], "text", "note"},
 *  "refusal":  {"status_code", "reason", "rule", "detail"}}
 * </pre>
 * {@code response} is absent when no response head came from the origin; {@code complete} is false when
 * the response broke off. {@code events} and {@code text} are there for {@code text/event-stream}.
 * {@code refusal} is there instead when Sluice refused the request itself (a red flag, a credential
 * under {@code redaction.action: block}, a spent token budget, ...): the status and reason it answered.
 */
public final class Capture {

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private final String eventId;
    private final Instant time;
    private final String extension;
    private final String host;
    private final int port;
    private final String method;
    private final String urlPath;
    private final @Nullable String requestContentType;
    private final @Nullable String requestContentEncoding;
    private final CapturedBody request;
    private final long maxBodyBytes;
    private final AtomicBoolean submitted = new AtomicBoolean();
    private @Nullable Integer status;
    private @Nullable String responseContentType;
    private @Nullable String responseContentEncoding;
    private @Nullable CapturedBody response;
    private boolean responseComplete;
    private @Nullable Integer refusalStatus;
    private @Nullable String refusalReason;
    private @Nullable String refusalRule;
    private @Nullable String refusalDetail;

    /**
     * Starts a capture of one request.
     *
     * @param eventId the exchange's audit event id (16 hex characters): the capture's name
     * @param urlPath the request target with query values masked ({@code AuditEvent.maskQuery})
     * @param maxBodyBytes the most bytes kept of each body
     */
    public Capture(String eventId, Instant time, String extension, String host, int port, String method,
                   String urlPath, String contentType, String contentEncoding, long maxBodyBytes) {
        this.eventId = Objects.requireNonNull(eventId, "eventId");
        this.time = Objects.requireNonNull(time, "time");
        this.extension = extension;
        this.host = host;
        this.port = port;
        this.method = method;
        this.urlPath = urlPath;
        this.requestContentType = contentType;
        this.requestContentEncoding = contentEncoding;
        this.maxBodyBytes = maxBodyBytes;
        this.request = new CapturedBody(contentEncoding, maxBodyBytes);
    }

    /** Returns the audit event id this capture belongs to. */
    public String eventId() {
        return eventId;
    }

    /** Returns the request body being kept. */
    public CapturedBody request() {
        return request;
    }

    /** Records the response head and starts keeping its body. */
    public void responseHead(int statusCode, String contentType, String contentEncoding) {
        this.status = statusCode;
        this.responseContentType = contentType;
        this.responseContentEncoding = contentEncoding;
        this.response = new CapturedBody(contentEncoding, maxBodyBytes);
    }

    /** Returns the response body being kept, or null before the response head. */
    public CapturedBody response() {
        return response;
    }

    /**
     * Real credential values (in the forms an origin could echo them) and the placeholder forms that
     * replace them in what is stored: the response is copied before the credentials phase scrubs it on its
     * way to the sandbox, so the capture scrubs its own copy the same way. Empty: nothing to replace.
     */
    private java.util.Map<String, String> scrub = java.util.Map.of();

    /** Sets the real-to-placeholder forms to replace in the stored request and response ({@link #scrub}). */
    public void scrubbing(java.util.Map<String, String> forms) {
        this.scrub = new java.util.LinkedHashMap<>(forms);
    }

    private String scrubbed(String text, boolean truncated) {
        for (java.util.Map.Entry<String, String> e : scrub.entrySet()) {
            if (text.contains(e.getKey())) {
                text = text.replace(e.getKey(), e.getValue());
            }
        }
        if (truncated) {
            // a body cut inside a real value would keep its beginning: cut that too
            for (String real : scrub.keySet()) {
                for (int k = Math.min(real.length() - 1, text.length()); k > 0; k--) {
                    if (text.endsWith(real.substring(0, k))) {
                        text = text.substring(0, text.length() - k);
                        break;
                    }
                }
            }
        }
        return text;
    }

    /** The same on bytes that are not UTF-8 text: the forms matched as their UTF-8 bytes. */
    private byte[] scrubbed(byte[] bytes) {
        if (scrub.isEmpty()) {
            return bytes;
        }
        String latin1 = new String(bytes, StandardCharsets.ISO_8859_1);
        for (java.util.Map.Entry<String, String> e : scrub.entrySet()) {
            String key = new String(e.getKey().getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
            if (latin1.contains(key)) {
                latin1 = latin1.replace(key,
                        new String(e.getValue().getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1));
            }
        }
        return latin1.getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Records that Sluice refused this request itself (its answer, not the origin's): the first call wins.
     *
     * @param statusCode the status Sluice answered (403, 429, ...)
     * @param reason the reason word ({@code red_flag}, {@code token_budget}, ...)
     * @param rule the rule id that refused, or null
     * @param detail the short safe note the audit record carries in {@code error}, or null
     */
    public void refused(int statusCode, String reason, String rule, String detail) {
        if (refusalStatus != null) {
            return;
        }
        this.refusalStatus = statusCode;
        this.refusalReason = reason;
        this.refusalRule = rule;
        this.refusalDetail = detail;
    }

    /** Answers whether {@link #refused} was called. */
    public boolean isRefused() {
        return refusalStatus != null;
    }

    /** Marks the response as read to its end. */
    public void responseComplete() {
        responseComplete = true;
    }

    /** Answers true the first time only: the one caller that hands this capture to the store. */
    boolean claim() {
        return submitted.compareAndSet(false, true);
    }

    /** Returns this capture as a JSON document (UTF-8, pretty-printed). */
    public byte[] toJson() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeStringField("event.id", eventId);
            g.writeStringField("time", dev.sluice.proxy.audit.AuditRecord.formatTime(time));
            string(g, "extension", extension);
            string(g, "server.address", host);
            g.writeNumberField("server.port", port);
            string(g, "http.request.method", method);
            string(g, "url.path", urlPath);
            g.writeObjectFieldStart("request");
            string(g, "content_type", requestContentType);
            string(g, "content_encoding", requestContentEncoding);
            body(g, request, false);
            g.writeEndObject();
            if (status != null) {
                g.writeObjectFieldStart("response");
                g.writeNumberField("status_code", status);
                string(g, "content_type", responseContentType);
                string(g, "content_encoding", responseContentEncoding);
                body(g, response, responseContentType != null
                        && responseContentType.toLowerCase(java.util.Locale.ROOT).startsWith("text/event-stream"));
                g.writeBooleanField("complete", responseComplete);
                g.writeEndObject();
            }
            if (refusalStatus != null) {
                g.writeObjectFieldStart("refusal");
                g.writeNumberField("status_code", refusalStatus);
                string(g, "reason", refusalReason);
                string(g, "rule", refusalRule);
                string(g, "detail", refusalDetail);
                g.writeEndObject();
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    private void body(JsonGenerator g, CapturedBody body, boolean sse) throws IOException {
        byte[] bytes = body.bytes();
        String text = utf8(bytes, body.truncated());
        if (text != null) {
            text = scrubbed(text, body.truncated());
            g.writeStringField("body", text);
        } else {
            g.writeStringField("body_base64", Base64.getEncoder().encodeToString(scrubbed(bytes)));
        }
        g.writeNumberField("body_bytes", bytes.length);
        g.writeBooleanField("truncated", body.truncated());
        string(g, "note", body.note());
        if (sse && text != null) {
            List<ServerSentEvents.Event> events = ServerSentEvents.parse(text);
            g.writeArrayFieldStart("events");
            for (ServerSentEvents.Event e : events) {
                g.writeStartObject();
                string(g, "event", e.event());
                g.writeStringField("data", e.data());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeStringField("text", ServerSentEvents.text(events));
        }
    }

    /** The bytes as UTF-8, or null when they are not; a cut body may end inside a character (dropped). */
    static @Nullable String utf8(byte[] bytes, boolean cut) {
        for (int drop = 0; drop <= (cut ? Math.min(3, bytes.length) : 0); drop++) {
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(bytes, 0, bytes.length - drop)).toString();
            } catch (CharacterCodingException e) {
                // try one byte shorter (a cut body), else not text
            }
        }
        return null;
    }

    private static void string(JsonGenerator g, String name, @Nullable String value) throws IOException {
        if (value != null) {
            g.writeStringField(name, value);
        }
    }
}
