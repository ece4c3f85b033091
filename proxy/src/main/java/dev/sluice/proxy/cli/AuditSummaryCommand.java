package dev.sluice.proxy.cli;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.audit.AuditFields;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice audit summary}: per extension — requests, allowed, denied and would_deny counts (and in
 * JSON {@code upstream_failures}: records with {@code outcome: upstream_failure}, counted as their decision),
 * denials by reason, {@code bytes.sent} and {@code bytes.received} totals (bytes), the top
 * {@value #TOP_DESTINATIONS} destinations ({@code server.address:server.port}) by requests, and
 * redactions (the sum of every {@code redactions} count, and per detector in JSON). Records without
 * an extension are counted under {@value #NO_EXTENSION}. Lines that are not JSON objects are skipped
 * and counted ({@code sluice audit verify} names them).
 */
@Command(name = "summary", description = "Summarise the audit log per extension.")
final class AuditSummaryCommand extends CliCommand implements Callable<Integer> {

    static final int TOP_DESTINATIONS = 10;
    static final String NO_EXTENSION = dev.sluice.rules.policy.Extension.UNIDENTIFIED;


    @Mixin
    AuditInput input;

    @Mixin
    AuditFilter filter;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "table",
            description = "table or json. Default: ${DEFAULT-VALUE}.")
    String format;

    /** The totals of one extension. */
    static final class ExtensionSummary {
        final String extension;
        long requests;
        long allowed;
        long denied;
        long wouldDeny;
        long upstreamFailures;
        long bytesSent;
        long bytesReceived;
        long redactions;
        final Map<String, Long> denialsByReason = new TreeMap<>();
        final Map<String, Long> redactionsByDetector = new TreeMap<>();
        final Map<String, Long> destinations = new HashMap<>();

        ExtensionSummary(String extension) {
            this.extension = extension;
        }

        void add(JsonNode r) {
            requests++;
            String decision = r.path(AuditFields.DECISION).asText("");
            switch (decision) {
                case "allow" -> allowed++;
                case "deny" -> {
                    denied++;
                    denialsByReason.merge(r.path(AuditFields.REASON).asText("(none)"), 1L, Long::sum);
                }
                case "would_deny" -> wouldDeny++;
                default -> {
                }
            }
            if (r.hasNonNull(AuditFields.OUTCOME)) {
                upstreamFailures++;
            }
            bytesSent += r.path(AuditFields.BYTES_SENT).asLong(0);
            bytesReceived += r.path(AuditFields.BYTES_RECEIVED).asLong(0);
            JsonNode red = r.path(AuditFields.REDACTIONS);
            for (Iterator<Map.Entry<String, JsonNode>> it = red.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                long n = e.getValue().asLong(0);
                redactions += n;
                redactionsByDetector.merge(e.getKey(), n, Long::sum);
            }
            String host = r.path(AuditFields.SERVER_ADDRESS).asText(null);
            if (host != null) {
                if (host.indexOf(':') >= 0) {
                    host = "[" + host + "]";
                }
                JsonNode port = r.get(AuditFields.SERVER_PORT);
                destinations.merge(port == null ? host : host + ":" + port.asInt(), 1L, Long::sum);
            }
        }

        /** The top destinations: most requests first, then by name. */
        List<Map.Entry<String, Long>> topDestinations() {
            return destinations.entrySet().stream()
                    .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder())
                            .thenComparing(Map.Entry.comparingByKey()))
                    .limit(TOP_DESTINATIONS)
                    .toList();
        }
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter out = out();
        PrintWriter err = err();
        checkFormat(format);
        prepare(filter);
        List<Path> files = auditFiles(input);
        if (files == null) {
            return 1;
        }
        Map<String, ExtensionSummary> byExtension = new TreeMap<>();
        long[] records = {0};
        long skipped = AuditInput.forEachRecord(files, (line, r) -> {
            if (!filter.matches(r)) {
                return;
            }
            records[0]++;
            String ext = r.path(AuditFields.EXTENSION).asText(NO_EXTENSION);
            byExtension.computeIfAbsent(ext, ExtensionSummary::new).add(r);
        });
        if (format.equals("json")) {
            printJson(out, files, records[0], skipped, byExtension.values());
        } else {
            printTable(out, files, records[0], skipped, byExtension.values());
        }
        if (skipped > 0) {
            err.println("sluice: skipped " + skipped + " lines that are not records (see `sluice audit verify`)");
        }
        return 0;
    }

    private static void printTable(PrintWriter out, List<Path> files, long records, long skipped,
                                   Iterable<ExtensionSummary> summaries) {
        out.println(records + " records in " + files.size() + " files" + (skipped > 0 ? ", " + skipped
                + " lines skipped" : ""));
        out.println();
        List<List<String>> rows = new ArrayList<>();
        List<List<String>> denials = new ArrayList<>();
        List<List<String>> destinations = new ArrayList<>();
        for (ExtensionSummary s : summaries) {
            rows.add(List.of(s.extension, n(s.requests), n(s.allowed), n(s.denied), n(s.wouldDeny),
                    n(s.bytesSent), n(s.bytesReceived), n(s.redactions)));
            s.denialsByReason.forEach((reason, count) -> denials.add(List.of(s.extension, reason, n(count))));
            s.topDestinations().forEach(e -> destinations.add(List.of(s.extension, e.getKey(), n(e.getValue()))));
        }
        AuditCommand.printTable(out, List.of("EXTENSION", "REQUESTS", "ALLOWED", "DENIED", "WOULD_DENY",
                "BYTES_SENT", "BYTES_RECEIVED", "REDACTIONS"), rows);
        if (!denials.isEmpty()) {
            out.println();
            out.println("Denials by reason");
            AuditCommand.printTable(out, List.of("EXTENSION", "REASON", "DENIALS"), denials);
        }
        if (!destinations.isEmpty()) {
            out.println();
            out.println("Top destinations (by requests, at most " + TOP_DESTINATIONS + " per extension)");
            AuditCommand.printTable(out, List.of("EXTENSION", "DESTINATION", "REQUESTS"), destinations);
        }
    }

    private static void printJson(PrintWriter out, List<Path> files, long records, long skipped,
                                  Iterable<ExtensionSummary> summaries) throws IOException {
        try (JsonGenerator g = AuditInput.MAPPER.getFactory().createGenerator(out)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            g.useDefaultPrettyPrinter();
            g.writeStartObject();
            g.writeArrayFieldStart("files");
            for (Path f : files) {
                g.writeString(f.toString());
            }
            g.writeEndArray();
            g.writeNumberField("records", records);
            g.writeNumberField("skipped_lines", skipped);
            g.writeArrayFieldStart("extensions");
            for (ExtensionSummary s : summaries) {
                g.writeStartObject();
                g.writeStringField("extension", s.extension);
                g.writeNumberField("requests", s.requests);
                g.writeNumberField("allowed", s.allowed);
                g.writeNumberField("denied", s.denied);
                g.writeNumberField("would_deny", s.wouldDeny);
                g.writeNumberField("upstream_failures", s.upstreamFailures);
                g.writeObjectFieldStart("denials_by_reason");
                for (Map.Entry<String, Long> e : s.denialsByReason.entrySet()) {
                    g.writeNumberField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
                g.writeNumberField(AuditFields.BYTES_SENT, s.bytesSent);
                g.writeNumberField(AuditFields.BYTES_RECEIVED, s.bytesReceived);
                g.writeNumberField(AuditFields.REDACTIONS, s.redactions);
                g.writeObjectFieldStart("redactions_by_detector");
                for (Map.Entry<String, Long> e : s.redactionsByDetector.entrySet()) {
                    g.writeNumberField(e.getKey(), e.getValue());
                }
                g.writeEndObject();
                g.writeArrayFieldStart("top_destinations");
                for (Map.Entry<String, Long> e : s.topDestinations()) {
                    g.writeStartObject();
                    g.writeStringField("destination", e.getKey());
                    g.writeNumberField("requests", e.getValue());
                    g.writeEndObject();
                }
                g.writeEndArray();
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        }
        out.println();
    }

    private static String n(long v) {
        return Long.toString(v);
    }
}
