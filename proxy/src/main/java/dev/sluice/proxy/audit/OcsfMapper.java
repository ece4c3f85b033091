package dev.sluice.proxy.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * Maps an {@link AuditRecord} to one OCSF event (Open Cybersecurity Schema Framework, schema 1.3), for
 * {@code audit.format: ocsf} on standard output and in the OTLP export. The audit file always keeps
 * Sluice's own form.
 *
 * <p>A record with an HTTP method other than {@code CONNECT} (a plain HTTP request, or a request inside
 * an intercepted tunnel) becomes an <b>HTTP Activity</b> event (category 4, class 4002; activity from the
 * method: Connect 1, Delete 2, Get 3, Head 4, Options 5, Post 6, Put 7, Trace 8, other 99). Every other
 * record (a CONNECT tunnel, a transparent TLS or HTTP connection that was not inspected, a DNS query)
 * becomes a <b>Network Activity</b> event (class 4001; activity Close 2 when allowed, Refuse 5 when
 * denied). {@code type_uid} is {@code class_uid × 100 + activity_id}. The field-by-field table is in
 * docs/audit.md ("OCSF").
 */
public final class OcsfMapper {

    /** The OCSF schema version the events claim. */
    public static final String SCHEMA_VERSION = "1.3.0";
    /** OCSF Network Activity class. */
    public static final int NETWORK_ACTIVITY = 4001;
    /** OCSF HTTP Activity class. */
    public static final int HTTP_ACTIVITY = 4002;

    /** The {@code unmapped} field of the matched red-flag rules' strongest action. */
    public static final String RED_FLAG_ACTION = "red_flag.action";

    private static final JsonFactory JSON = JsonFactory.builder().build();
    private static final Map<String, Integer> HTTP_ACTIVITIES = Map.of("CONNECT", 1, "DELETE", 2, "GET", 3,
            "HEAD", 4, "OPTIONS", 5, "POST", 6, "PUT", 7, "TRACE", 8);

    private OcsfMapper() {
    }

    /** Returns the OCSF class a record maps to: {@link #HTTP_ACTIVITY} or {@link #NETWORK_ACTIVITY}. */
    public static int classUid(AuditRecord r) {
        return r.method() != null && !"CONNECT".equals(r.method()) ? HTTP_ACTIVITY : NETWORK_ACTIVITY;
    }

    /** Returns the record as one OCSF JSON object on one line (no trailing newline). */
    public static String toJson(AuditRecord r) {
        return toJson(r, AuditExport.redFlagAction(r, null));
    }

    /**
     * As {@link #toJson(AuditRecord)}, with the matched red-flag rules' strongest action
     * ({@code unmapped."red_flag.action"}), or null.
     */
    public static String toJson(AuditRecord r, String redFlagAction) {
        StringWriter w = new StringWriter(512);
        try (JsonGenerator g = JSON.createGenerator(w)) {
            write(r, g, redFlagAction);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return w.toString();
    }

    /** Writes the record as one OCSF JSON object to {@code g}. */
    public static void write(AuditRecord r, JsonGenerator g) throws IOException {
        write(r, g, AuditExport.redFlagAction(r, null));
    }

    /**
     * Writes the record as one OCSF JSON object to {@code g}; {@code redFlagAction} is the matched
     * red-flag rules' strongest action, or null.
     */
    public static void write(AuditRecord r, JsonGenerator g, String redFlagAction) throws IOException {
        int classUid = classUid(r);
        boolean denied = "deny".equals(r.decision());
        int activity;
        String activityName;
        if (classUid == HTTP_ACTIVITY) {
            activity = HTTP_ACTIVITIES.getOrDefault(r.method(), 99);
            activityName = activity == 99 ? "Other" : capitalised(r.method());
        } else {
            activity = denied ? 5 : 2;
            activityName = denied ? "Refuse" : "Close";
        }
        long startMs = r.time().toEpochMilli();
        g.writeStartObject();
        g.writeNumberField("category_uid", 4);
        g.writeStringField("category_name", "Network Activity");
        g.writeNumberField("class_uid", classUid);
        g.writeStringField("class_name", classUid == HTTP_ACTIVITY ? "HTTP Activity" : "Network Activity");
        g.writeNumberField("activity_id", activity);
        g.writeStringField("activity_name", activityName);
        g.writeNumberField("type_uid", classUid * 100L + activity);
        g.writeNumberField("time", startMs);
        g.writeNumberField("start_time", startMs);
        g.writeNumberField("end_time", startMs + r.durationMs());
        g.writeNumberField("duration", r.durationMs());
        int severity = denied ? 3 : "would_deny".equals(r.decision()) ? 2 : 1;
        g.writeNumberField("severity_id", severity);
        g.writeStringField("severity", severity == 3 ? "Medium" : severity == 2 ? "Low" : "Informational");
        if (r.decision() != null) {
            g.writeNumberField("action_id", denied ? 2 : 1);
            g.writeStringField("action", denied ? "Denied" : "Allowed");
            g.writeNumberField("disposition_id", denied ? 2 : 1);
            g.writeStringField("disposition", denied ? "Blocked" : "Allowed");
        }
        boolean failed = denied || r.error() != null || r.outcome() != null;
        g.writeNumberField("status_id", failed ? 2 : 1);
        g.writeStringField("status", failed ? "Failure" : "Success");
        if (r.reason() != null) {
            g.writeStringField("status_detail", r.reason());
        }
        if (r.statusCode() != null) {
            g.writeStringField("status_code", Integer.toString(r.statusCode()));
        }
        if (r.error() != null) {
            g.writeStringField("message", r.error());
        }

        g.writeObjectFieldStart("metadata");
        g.writeStringField("version", SCHEMA_VERSION);
        g.writeStringField("uid", r.eventId());
        g.writeStringField("log_name", "sluice.audit");
        g.writeObjectFieldStart("product");
        g.writeStringField("name", "Sluice");
        g.writeStringField("vendor_name", "Sluice");
        g.writeEndObject();
        g.writeEndObject();

        if (r.extension() != null) {
            g.writeObjectFieldStart("actor");
            g.writeStringField("app_name", r.extension());
            g.writeEndObject();
        }
        if (r.clientAddress() != null || r.clientPort() != null) {
            g.writeObjectFieldStart("src_endpoint");
            string(g, "ip", r.clientAddress());
            number(g, "port", r.clientPort());
            g.writeEndObject();
        }
        if (r.serverAddress() != null || r.serverPort() != null || r.peerAddress() != null) {
            g.writeObjectFieldStart("dst_endpoint");
            string(g, "hostname", r.serverAddress());
            string(g, "ip", r.peerAddress());
            number(g, "port", r.serverPort());
            g.writeEndObject();
        }
        g.writeObjectFieldStart("connection_info");
        g.writeStringField("protocol_name", "tcp");
        g.writeNumberField("direction_id", 2);
        g.writeStringField("direction", "Outbound");
        g.writeEndObject();
        g.writeObjectFieldStart("traffic");
        g.writeNumberField("bytes_out", r.bytesSent());
        g.writeNumberField("bytes_in", r.bytesReceived());
        g.writeNumberField("bytes", r.bytesSent() + r.bytesReceived());
        g.writeEndObject();
        if (r.tlsSni() != null) {
            g.writeObjectFieldStart("tls");
            g.writeStringField("sni", r.tlsSni());
            g.writeEndObject();
        }
        if (classUid == HTTP_ACTIVITY) {
            g.writeObjectFieldStart("http_request");
            g.writeStringField("http_method", r.method());
            g.writeObjectFieldStart("url");
            string(g, "scheme", r.urlScheme());
            string(g, "hostname", r.serverAddress());
            number(g, "port", r.serverPort());
            string(g, "path", r.urlPath());
            g.writeEndObject();
            g.writeEndObject();
            if (r.statusCode() != null) {
                g.writeObjectFieldStart("http_response");
                g.writeNumberField("code", r.statusCode());
                g.writeEndObject();
            }
        }
        g.writeObjectFieldStart("unmapped");
        string(g, AuditFields.EXTENSION, r.extension());
        string(g, AuditFields.LISTENER, r.listener());
        string(g, AuditFields.DECISION, r.decision());
        string(g, AuditFields.OUTCOME, r.outcome());
        string(g, AuditFields.REASON, r.reason());
        string(g, AuditFields.RULE, r.rule());
        string(g, AuditFields.TLS_MODE, r.tlsMode());
        string(g, AuditFields.PIN, r.pin());
        string(g, AuditFields.APPROVAL, r.approval());
        string(g, AuditFields.APPROVAL_BY, r.approvalBy());
        string(g, AuditFields.APPROVAL_SCOPE, r.approvalScope());
        if (classUid == NETWORK_ACTIVITY) {
            string(g, AuditFields.HTTP_REQUEST_METHOD, r.method());
        }
        if (r.redactions() != null) {
            g.writeObjectFieldStart(AuditFields.REDACTIONS);
            for (Map.Entry<String, Long> e : r.redactions().entrySet()) {
                g.writeNumberField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
        }
        string(g, AuditFields.LLM_MODEL, r.llmModel());
        longNumber(g, AuditFields.LLM_INPUT_TOKENS, r.llmInputTokens());
        longNumber(g, AuditFields.LLM_OUTPUT_TOKENS, r.llmOutputTokens());
        if (r.redFlags() != null) {
            g.writeObjectFieldStart(AuditFields.RED_FLAGS);
            for (Map.Entry<String, Long> e : r.redFlags().entrySet()) {
                g.writeNumberField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            string(g, RED_FLAG_ACTION, redFlagAction);
        }
        if (Boolean.TRUE.equals(r.capture())) {
            g.writeBooleanField(AuditFields.CAPTURE, true);
        }
        g.writeEndObject();
        g.writeEndObject();
    }

    private static void longNumber(JsonGenerator g, String name, Long value) throws IOException {
        if (value != null) {
            g.writeNumberField(name, value);
        }
    }

    private static String capitalised(String method) {
        return method.charAt(0) + method.substring(1).toLowerCase(java.util.Locale.ROOT);
    }

    private static void string(JsonGenerator g, String name, String value) throws IOException {
        if (value != null) {
            g.writeStringField(name, value);
        }
    }

    private static void number(JsonGenerator g, String name, Integer value) throws IOException {
        if (value != null) {
            g.writeNumberField(name, value);
        }
    }
}
