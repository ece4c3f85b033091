package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.scalarText;
import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import dev.sluice.rules.redact.BuiltinDetectors;
import dev.sluice.rules.redact.Detector;
import dev.sluice.rules.redact.RedactionAction;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Reads {@code redaction} (docs/policy.md "redaction"): action, binary, built-in and custom detectors. */
final class RedactionSection {

    static final Set<String> REDACTION_KEYS = orderedSet("action", "binary", "builtin", "custom");
    static final Set<String> CUSTOM_DETECTOR_KEYS = orderedSet("id", "pattern", "keywords", "max_length");
    static final Pattern CUSTOM_ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    /** Longest match of a custom detector unless {@code max_length} says otherwise, in bytes. */
    static final int DEFAULT_CUSTOM_MAX_LENGTH = 256;

    private final PolicyCursor in;

    RedactionSection(PolicyCursor in) {
        this.in = in;
    }

    /**
     * The {@code redaction} section: {@code action} (redact | block | report, default redact),
     * {@code binary} (block | report, default block: what a finding in a binary body does),
     * {@code builtin} ({@code all}, the default, or a list of built-in detector ids), {@code custom}
     * (a list of {@code {id, pattern, keywords, max_length}}).
     */
    @Nullable RedactionSettings redaction(@Nullable Node node) {
        if (node == null || isNull(node)) {
            return RedactionSettings.defaults();
        }
        MapNode m = in.map(node, "redaction");
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, "redaction.", REDACTION_KEYS, Set.of());
        RedactionAction action = RedactionAction.REDACT;
        Node actionNode = value(m, "action");
        if (actionNode != null) {
            String a = in.string(actionNode, "redaction.action");
            if (a != null) {
                switch (a) {
                    case "redact" -> action = RedactionAction.REDACT;
                    case "block" -> action = RedactionAction.BLOCK;
                    case "report" -> action = RedactionAction.REPORT;
                    default -> in.error(actionNode.loc(), "redaction.action: " + a + " (expected: redact, block or report)");
                }
            }
        }
        RedactionAction binary = RedactionAction.BLOCK;
        Node binaryNode = value(m, "binary");
        if (binaryNode != null) {
            String b = in.string(binaryNode, "redaction.binary");
            if (b != null) {
                switch (b) {
                    case "block" -> binary = RedactionAction.BLOCK;
                    case "report" -> binary = RedactionAction.REPORT;
                    default -> in.error(binaryNode.loc(), "redaction.binary: " + b + " (expected: block or report)");
                }
            }
        }
        List<String> builtinIds = new ArrayList<>();
        Node builtinNode = value(m, "builtin");
        if (builtinNode == null || (builtinNode instanceof ScalarNode && "all".equals(scalarText(builtinNode)))) {
            for (Detector d : BuiltinDetectors.all()) {
                builtinIds.add(d.id());
            }
        } else if (builtinNode instanceof ListNode list) {
            for (int i = 0; i < list.items().size(); i++) {
                Node item = list.items().get(i);
                String id = in.string(item, "redaction.builtin[" + i + "]");
                if (id == null) {
                    continue;
                }
                if (BuiltinDetectors.byId(id).isEmpty()) {
                    in.error(item.loc(), "redaction.builtin[" + i + "]: " + id + " is not a built-in detector (expected one of: "
                            + String.join(", ", BuiltinDetectors.all().stream().map(Detector::id).toList()) + ")");
                } else if (builtinIds.contains(id)) {
                    in.error(item.loc(), "redaction.builtin[" + i + "]: " + id + " listed twice");
                } else {
                    builtinIds.add(id);
                }
            }
        } else {
            in.error(builtinNode.loc(), "redaction.builtin: " + show(builtinNode) + " (expected: all, or a list of detector ids)");
        }
        List<Detector> custom = new ArrayList<>();
        Node customNode = value(m, "custom");
        if (customNode != null && !isNull(customNode)) {
            ListNode list = in.list(customNode, "redaction.custom");
            if (list != null) {
                Set<String> ids = new LinkedHashSet<>();
                for (int i = 0; i < list.items().size(); i++) {
                    Detector d = customDetector(list.items().get(i), "redaction.custom[" + i + "]", ids);
                    if (d != null) {
                        custom.add(d);
                    }
                }
            }
        }
        if (in.errors.size() != before) {
            return null;
        }
        return RedactionSettings.of(action, binary, builtinIds, custom);
    }

    @Nullable Detector customDetector(Node node, String path, Set<String> ids) {
        MapNode m = in.map(node, path);
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, path + ".", CUSTOM_DETECTOR_KEYS, Set.of());
        String id = null;
        Node idNode = value(m, "id");
        if (idNode == null) {
            in.error(m.loc(), path + ".id: missing (expected: an id such as corp-token)");
        } else {
            id = in.string(idNode, path + ".id");
            if (id != null) {
                if (!CUSTOM_ID.matcher(id).matches()) {
                    in.error(idNode.loc(), path + ".id: " + id + " (expected: " + CUSTOM_ID.pattern() + ")");
                } else if (BuiltinDetectors.byId(id).isPresent()) {
                    in.error(idNode.loc(), path + ".id: " + id + " is the id of a built-in detector (expected: a new id)");
                } else if (!ids.add(id)) {
                    in.error(idNode.loc(), path + ".id: " + id + " listed twice");
                }
            }
        }
        Pattern pattern = in.customPattern(m, path);
        List<String> keywords = in.customKeywords(m, path);
        int maxLength = (int) in.integer(value(m, "max_length"), path + ".max_length", DEFAULT_CUSTOM_MAX_LENGTH, 1,
                Detector.MAX_LENGTH_LIMIT);
        if (in.errors.size() != before || id == null || pattern == null || keywords.isEmpty()) {
            return null;
        }
        return Detector.custom(id, pattern, keywords, maxLength);
    }
}
