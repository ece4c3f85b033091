package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code audit} (docs/policy.md "audit"): file, rotation, format, stdout. */
final class AuditSection {

    static final Set<String> AUDIT_KEYS = orderedSet("path", "max_file_bytes", "keep_files", "format", "stdout");

    private final PolicyCursor in;

    AuditSection(PolicyCursor in) {
        this.in = in;
    }

    AuditSettings audit(@Nullable Node node) {
        AuditSettings d = AuditSettings.DEFAULT;
        if (node == null || isNull(node)) {
            return d;
        }
        MapNode m = in.map(node, "audit");
        if (m == null) {
            return d;
        }
        in.checkKeys(m, "audit.", AUDIT_KEYS, Set.of());
        Path path = d.path();
        Node p = value(m, "path");
        if (p != null) {
            String text = in.string(p, "audit.path");
            if (text != null) {
                if (text.isEmpty()) {
                    in.error(p.loc(), "audit.path: empty (expected: a file path)");
                } else {
                    try {
                        path = Path.of(text);
                    } catch (InvalidPathException e) {
                        in.error(p.loc(), "audit.path: " + text + " (expected: a valid file path)");
                    }
                }
            }
        }
        long maxFileBytes = in.size(value(m, "max_file_bytes"), "audit.max_file_bytes", d.maxFileBytes(),
                Long.MAX_VALUE);
        long keepFiles = in.integer(value(m, "keep_files"), "audit.keep_files", d.keepFiles(), 1,
                AuditSettings.MAX_KEEP_FILES);
        AuditSettings.Format format = d.format();
        Node formatNode = value(m, "format");
        if (formatNode != null) {
            String f = in.string(formatNode, "audit.format");
            if ("sluice".equals(f)) {
                format = AuditSettings.Format.SLUICE;
            } else if ("ocsf".equals(f)) {
                format = AuditSettings.Format.OCSF;
            } else if (f != null) {
                in.error(formatNode.loc(), "audit.format: " + f + " (expected: sluice or ocsf)");
            }
        }
        boolean stdout = d.stdout();
        Node stdoutNode = value(m, "stdout");
        if (stdoutNode != null) {
            if (stdoutNode instanceof ScalarNode scalar
                    && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                stdout = scalar.token() == JsonToken.VALUE_TRUE;
            } else {
                in.error(stdoutNode.loc(), "audit.stdout: " + show(stdoutNode) + " (expected: true or false)");
            }
        }
        return new AuditSettings(path, maxFileBytes, (int) keepFiles, format, stdout);
    }
}
