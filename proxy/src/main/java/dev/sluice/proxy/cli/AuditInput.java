package dev.sluice.proxy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.audit.AuditReader;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Which audit files a {@code sluice audit} subcommand reads: {@code --file FILE}, or the policy's
 * {@code audit.path} under {@code --data-dir} (default {@code sluice-data/audit.jsonl}), each with its
 * rotated siblings, oldest first ({@link AuditReader#filesFor(Path)}).
 */
final class AuditInput {

    static final ObjectMapper MAPPER = new ObjectMapper();

    @Mixin
    CommonOptions common;

    @Option(names = "--file", paramLabel = "FILE",
            description = "Audit log to read, with its rotated siblings FILE.1, FILE.2, ... (a FILE.N alone is "
                    + "read alone). Default: the policy's audit.path in the data dir.")
    Path file;

    /** Thrown when the input cannot be determined; the message is for the operator. */
    static final class InputException extends Exception {
        InputException(String message) {
            super(message);
        }
    }

    /** Returns the active file the options name (not checked for existence). */
    Path activeFile() throws InputException {
        if (file != null) {
            return file;
        }
        Policy policy;
        try {
            policy = common.loadPolicy();
        } catch (PolicyException e) {
            throw new InputException("the policy did not load: " + String.join("; ",
                    e.errors().stream().map(Object::toString).toList()));
        }
        return common.dataDir.resolve(policy.audit().path());
    }

    /** Returns the files to read, oldest first; never empty. */
    List<Path> files() throws InputException, IOException {
        Path active = activeFile();
        List<Path> files = AuditReader.filesFor(active);
        if (files.isEmpty()) {
            throw new InputException("no audit log at " + active.toAbsolutePath());
        }
        return files;
    }

    /** Receives parsed records. */
    interface RecordHandler {
        void accept(AuditReader.Line line, JsonNode record);
    }

    /**
     * Reads every line of {@code files} and hands each one that is a JSON object to {@code handler}.
     *
     * @return how many lines were skipped because they are not JSON objects
     */
    static long forEachRecord(List<Path> files, RecordHandler handler) throws IOException {
        long[] skipped = {0};
        AuditReader.readLines(files, line -> {
            JsonNode node;
            try {
                node = line.terminated() ? MAPPER.readTree(line.bytes()) : null;
            } catch (IOException e) {
                node = null;
            }
            if (node == null || !node.isObject()) {
                skipped[0]++;
                return;
            }
            handler.accept(line, node);
        });
        return skipped[0];
    }
}
