package dev.sluice.proxy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.audit.AuditFields;
import dev.sluice.proxy.audit.AuditReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice audit tail}: the last {@code -n} records (default 20) that pass the filters, oldest
 * first. {@code --format json} prints the lines exactly as stored (JSON Lines, {@code prev_hash}
 * included); {@code table} prints one aligned row per record. {@code --follow} then keeps printing
 * records as they are appended to the active file, following it across rotations (polling every
 * {@value #FOLLOW_POLL_MILLIS} ms), until interrupted. {@code --captured} keeps only records marked
 * {@code capture: true} (policy {@code capture}), and the table then starts with each one's event id.
 */
@Command(name = "tail", description = "Print the last records of the audit log.")
final class AuditTailCommand extends CliCommand implements Callable<Integer> {

    static final long FOLLOW_POLL_MILLIS = 500;
    /** The REASON column is as wide as the longest reason label, so no reason pushes the columns after it. */
    private static final int REASON_WIDTH = java.util.Arrays.stream(dev.sluice.rules.decision.Reason.values())
            .mapToInt(reason -> reason.label().length()).max().orElse(22);
    private static final String ROW = "%-24s  %-16s  %-10s  %-" + REASON_WIDTH + "s  %-7s  %-40s  %6s  %10s  %10s";


    @Mixin
    AuditInput input;

    @Mixin
    AuditFilter filter;

    @Option(names = {"-n", "--lines"}, paramLabel = "N", defaultValue = "20",
            description = "How many records. Default: ${DEFAULT-VALUE}.")
    int count;

    @Option(names = "--format", paramLabel = "FORMAT", defaultValue = "table",
            description = "table or json (the stored lines). Default: ${DEFAULT-VALUE}.")
    String format;

    @Option(names = {"-f", "--follow"}, description = "Keep printing records as they are written.")
    boolean follow;

    @Option(names = "--captured", description = "Only exchanges that were captured (capture: true); the table "
            + "then starts with their EVENT_ID, for `sluice audit show`.")
    boolean captured;

    private record Entry(String raw, JsonNode record) {
    }

    @Override
    public Integer call() throws IOException {
        PrintWriter out = out();
        PrintWriter err = err();
        checkFormat(format);
        if (count < 0) {
            throw usage("--lines: " + count + " (expected: >= 0)");
        }
        prepare(filter);
        List<Path> files = auditFiles(input);
        if (files == null) {
            return 1;
        }
        Path last = files.get(files.size() - 1);
        Object lastKey = fileKey(last); // before reading, so that a rotation during the read is noticed
        ArrayDeque<Entry> kept = new ArrayDeque<>();
        long[] lastFileBytes = {0};
        long skipped = AuditInput.forEachRecord(files, (line, r) -> {
            if (line.file().equals(last)) {
                lastFileBytes[0] += line.bytes().length + 1L;
            }
            if (count > 0 && matches(r)) {
                if (kept.size() == count) {
                    kept.removeFirst();
                }
                kept.addLast(new Entry(line.text(), r));
            }
        });
        if (format.equals("table")) {
            out.print(captured ? String.format("%-16s  ", "EVENT_ID") : "");
            out.println(String.format(ROW, "TIME", "EXTENSION", "DECISION", "REASON", "METHOD", "DESTINATION",
                    "STATUS", "SENT", "RECEIVED").stripTrailing());
        }
        for (Entry e : kept) {
            print(out, e);
        }
        if (skipped > 0) {
            err.println("sluice: skipped " + skipped + " lines that are not records (see `sluice audit verify`)");
        }
        out.flush();
        if (follow) {
            follow(out, err, last, lastKey, lastFileBytes[0]);
        }
        return 0;
    }

    private void print(PrintWriter out, Entry e) {
        if (format.equals("json")) {
            out.println(e.raw());
            return;
        }
        JsonNode r = e.record();
        if (captured) {
            out.print(String.format("%-16s  ", r.path(AuditFields.EVENT_ID).asText("-")));
        }
        String host = r.path(AuditFields.SERVER_ADDRESS).asText("");
        JsonNode port = r.get(AuditFields.SERVER_PORT);
        String destination = host.isEmpty() ? "-" : (host.indexOf(':') >= 0 ? "[" + host + "]" : host)
                + (port == null ? "" : ":" + port.asInt());
        out.println(String.format(ROW,
                r.path(AuditFields.TIME).asText("-"),
                r.path(AuditFields.EXTENSION).asText(dev.sluice.rules.policy.Extension.UNIDENTIFIED),
                r.path(AuditFields.DECISION).asText("-"),
                r.path(AuditFields.REASON).asText("-"),
                r.path(AuditFields.HTTP_REQUEST_METHOD).asText("-"),
                destination,
                r.path(AuditFields.HTTP_RESPONSE_STATUS_CODE).asText("-"),
                r.path(AuditFields.BYTES_SENT).asText("0"),
                r.path(AuditFields.BYTES_RECEIVED).asText("0")).stripTrailing());
    }

    /**
     * Polls {@code file} from {@code position}. When the file was rotated since the last poll, first
     * reads the rest of the old file (found among the rotated siblings by its file key) and any file
     * rotated after it, then the new file from its start.
     */
    private void follow(PrintWriter out, PrintWriter err, Path file, Object fileKey, long position)
            throws IOException {
        StringBuilder partial = new StringBuilder();
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(FOLLOW_POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            Object key = fileKey(file);
            if (key == null) {
                continue; // between a rotation's rename and the new file
            }
            if (!Objects.equals(key, fileKey)) {
                List<Path> set = AuditReader.files(file);
                int old = -1;
                for (int i = 0; i < set.size() - 1; i++) {
                    if (Objects.equals(fileKey(set.get(i)), fileKey)) {
                        old = i;
                    }
                }
                if (old < 0) {
                    err.println("sluice: the followed file was rotated away before it was read to its end; "
                            + "records may be missing here");
                    err.flush();
                } else {
                    drain(out, set.get(old), position, partial);
                    for (int i = old + 1; i < set.size() - 1; i++) {
                        partial.setLength(0);
                        drain(out, set.get(i), 0, partial);
                    }
                }
                fileKey = key;
                position = 0;
                partial.setLength(0);
            }
            position = drain(out, file, position, partial);
            out.flush();
        }
    }

    /** Prints the records in {@code file} from {@code position} on; returns the position after them. */
    private long drain(PrintWriter out, Path file, long position, StringBuilder partial) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            if (ch.size() < position) {
                position = 0;
                partial.setLength(0);
            }
            ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
            java.io.ByteArrayOutputStream chunk = new java.io.ByteArrayOutputStream();
            int n;
            while ((n = ch.read(buf, position)) > 0) {
                chunk.write(buf.array(), 0, n);
                position += n;
                buf.clear();
            }
            partial.append(chunk.toString(StandardCharsets.UTF_8));
        } catch (NoSuchFileException e) {
            return position;
        }
        int nl;
        while ((nl = partial.indexOf("\n")) >= 0) {
            String line = partial.substring(0, nl);
            partial.delete(0, nl + 1);
            JsonNode r;
            try {
                r = AuditInput.MAPPER.readTree(line);
            } catch (IOException e) {
                continue;
            }
            if (r != null && r.isObject() && matches(r)) {
                print(out, new Entry(line, r));
            }
        }
        return position;
    }

    private boolean matches(JsonNode r) {
        return filter.matches(r) && (!captured || r.path(AuditFields.CAPTURE).asBoolean(false));
    }

    private static Object fileKey(Path file) {
        try {
            BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
            Object key = a.fileKey();
            return key != null ? key : a.creationTime();
        } catch (IOException e) {
            return null;
        }
    }
}
