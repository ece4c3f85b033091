package dev.sluice.proxy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.proxy.audit.AuditFields;
import dev.sluice.proxy.capture.CaptureStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice audit show EVENT_ID}: one exchange, its audit record and, when it was captured (policy
 * {@code capture}), the request as sent upstream and the response, from the data dir's {@code captures/}.
 * {@code --format text} (the default) prints the record as indented JSON, then each body as text (an
 * event stream also as its reassembled text) and, for a request Sluice refused, the refusal's status and reason; {@code json} prints one object {@code {"record": ...,
 * "capture": ...}}. Exit codes: 0 shown; 1 no record with that id (or no audit log), or a record marked
 * {@code capture: true} whose capture file is missing or unreadable (the record is still printed); 2 an id
 * that is not 16 lowercase hex characters.
 */
@Command(name = "show", description = "Print one exchange: its audit record and its captured request and response.")
final class AuditShowCommand extends CliCommand implements Callable<Integer> {

    private static final Pattern ID = Pattern.compile("[0-9a-f]{16}");

    @Mixin
    AuditInput input;

    @Parameters(paramLabel = "EVENT_ID", description = "The record's event.id (16 hex characters).")
    String eventId;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "text",
            description = "text or json. Default: ${DEFAULT-VALUE}.")
    String format;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = out();
        PrintWriter err = err();
        if (!format.equals("text") && !format.equals("json")) {
            throw usage("--format: " + format + " (expected: text or json)");
        }
        String id = eventId.toLowerCase(java.util.Locale.ROOT);
        if (!ID.matcher(id).matches()) {
            throw usage("EVENT_ID: " + eventId + " (expected: 16 hex characters, the record's event.id)");
        }
        List<Path> files = auditFiles(input);
        if (files == null) {
            return 1;
        }
        JsonNode[] found = {null};
        AuditInput.forEachRecord(files, (line, r) -> {
            if (found[0] == null && id.equals(r.path(AuditFields.EVENT_ID).asText())) {
                found[0] = r;
            }
        });
        JsonNode record = found[0];
        if (record == null) {
            err.println("sluice: no audit record with event.id " + id + " in " + files.get(files.size() - 1)
                    + (files.size() > 1 ? " or its " + (files.size() - 1) + " rotated file(s)" : "")
                    + " (see `sluice audit tail --captured`)");
            return 1;
        }
        if (record instanceof ObjectNode o) {
            o.remove(AuditFields.PREV_HASH);
        }
        boolean marked = record.path(AuditFields.CAPTURE).asBoolean(false);
        JsonNode capture = null;
        String missing = null;
        if (marked) {
            Path file = CaptureStore.file(input.common.dataDir, id);
            try {
                capture = AuditInput.MAPPER.readTree(Files.readAllBytes(file));
            } catch (NoSuchFileException e) {
                missing = "no capture file " + file + ": it was not written (sluice_captures_total{result=\"failed\"} or "
                        + "{result=\"dropped\"}), or capture.retention / max_total_bytes removed it, or --data-dir is "
                        + "not the one Sluice runs with";
            } catch (IOException e) {
                missing = "capture file " + file + " unreadable: " + e.getMessage();
            }
        }
        if (format.equals("json")) {
            ObjectNode both = AuditInput.MAPPER.createObjectNode();
            both.set("record", record);
            both.set("capture", capture);
            out.println(AuditInput.MAPPER.writeValueAsString(both));
        } else {
            out.println("== audit record");
            out.println(AuditInput.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(record));
            if (capture != null) {
                printCapture(out, capture);
            } else if (!marked) {
                out.println("== not captured (capture.hosts and capture.sample in the policy decide)");
            }
        }
        out.flush();
        if (missing != null) {
            err.println("sluice: " + missing);
            return 1;
        }
        return 0;
    }

    private static void printCapture(PrintWriter out, JsonNode capture) {
        JsonNode request = capture.path("request");
        out.println("== request (as sent upstream: after redaction, before credential injection) "
                + capture.path("http.request.method").asText("") + " " + capture.path("url.path").asText("")
                + describe(request));
        printBody(out, request);
        JsonNode response = capture.get("response");
        JsonNode refusal = capture.get("refusal");
        if (refusal != null) {
            out.println("== refused by Sluice " + refusal.path("status_code").asText("") + " "
                    + refusal.path("reason").asText("")
                    + (refusal.has("rule") ? " (rule " + refusal.path("rule").asText() + ")" : "")
                    + (refusal.has("detail") ? ": " + refusal.path("detail").asText() : "")
                    + " (Sluice's answer, not the origin's)");
        }
        if (response == null) {
            if (refusal == null) {
                out.println("== response: none (no response head came from the origin)");
            }
            return;
        }
        out.println("== response " + response.path("status_code").asText("") + describe(response)
                + (response.path("complete").asBoolean(false) ? "" : ", incomplete"));
        printBody(out, response);
        if (response.has("events")) {
            out.println("== response events: " + response.path("events").size() + "; text:");
            out.println(response.path("text").asText(""));
        }
    }

    private static String describe(JsonNode body) {
        StringBuilder b = new StringBuilder(" (");
        b.append(body.path("content_type").asText("no content-type"));
        if (body.has("content_encoding")) {
            b.append(", content-encoding ").append(body.path("content_encoding").asText()).append(" undone");
        }
        b.append(", ").append(body.path("body_bytes").asLong()).append(" bytes");
        if (body.path("truncated").asBoolean(false)) {
            b.append(", truncated at capture.max_body_bytes");
        }
        if (body.has("note")) {
            b.append(", ").append(body.path("note").asText());
        }
        return b.append(')').toString();
    }

    private static void printBody(PrintWriter out, JsonNode body) {
        if (body.has("body")) {
            String text = body.path("body").asText();
            out.println(text);
        } else if (body.has("body_base64")) {
            out.println("(not UTF-8; base64) " + body.path("body_base64").asText());
        }
        if (body.path("truncated").asBoolean(false)) {
            out.println("[... truncated]");
        }
    }
}
