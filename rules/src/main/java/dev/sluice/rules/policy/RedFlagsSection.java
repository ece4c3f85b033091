package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.TargetParser;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Reads {@code red_flags} (docs/policy.md "red_flags"): built-in and custom rules, direction, action, suppressions. */
final class RedFlagsSection {

    static final Set<String> RED_FLAG_KEYS = orderedSet("rules", "direction", "action", "suppress");
    static final Set<String> RED_FLAG_RULE_KEYS = orderedSet("id", "pattern", "keywords", "action", "direction");
    static final Set<String> SUPPRESS_KEYS = orderedSet("rule", "host", "path_prefix");

    private final PolicyCursor in;

    RedFlagsSection(PolicyCursor in) {
        this.in = in;
    }

    dev.sluice.rules.redflag.@Nullable RedFlagSettings redFlags(@Nullable Node node, List<String> internalDomains) {
        if (node == null || isNull(node)) {
            return null;
        }
        MapNode m = in.map(node, "red_flags");
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, "red_flags.", RED_FLAG_KEYS, Set.of());
        dev.sluice.rules.redflag.RedFlagAction action = redFlagAction(value(m, "action"), "red_flags.action",
                dev.sluice.rules.redflag.RedFlagAction.LOG);
        dev.sluice.rules.redflag.RedFlagDirection direction = redFlagDirection(value(m, "direction"),
                "red_flags.direction", dev.sluice.rules.redflag.RedFlagDirection.BOTH);
        List<dev.sluice.rules.redflag.RedFlagRule> rules = new ArrayList<>();
        Set<String> ids = new LinkedHashSet<>();
        Node rulesNode = value(m, "rules");
        if (rulesNode == null) {
            in.error(m.loc(), "red_flags.rules: missing (expected: a list of built-in ids or {id, pattern, keywords})");
        } else {
            ListNode list = in.list(rulesNode, "red_flags.rules");
            if (list != null) {
                for (int i = 0; i < list.items().size(); i++) {
                    dev.sluice.rules.redflag.RedFlagRule r = redFlagRule(list.items().get(i),
                            "red_flags.rules[" + i + "]", ids, action, direction, internalDomains);
                    if (r != null) {
                        rules.add(r);
                    }
                }
            }
        }
        List<dev.sluice.rules.redflag.RedFlagSettings.Suppression> suppress = new ArrayList<>();
        Node suppressNode = value(m, "suppress");
        if (suppressNode != null && !isNull(suppressNode)) {
            ListNode list = in.list(suppressNode, "red_flags.suppress");
            if (list != null) {
                for (int i = 0; i < list.items().size(); i++) {
                    String path = "red_flags.suppress[" + i + "]";
                    MapNode s = in.map(list.items().get(i), path);
                    if (s == null) {
                        continue;
                    }
                    in.checkKeys(s, path + ".", SUPPRESS_KEYS, Set.of());
                    Node ruleNode = value(s, "rule");
                    String rule = null;
                    if (ruleNode == null) {
                        in.error(s.loc(), path + ".rule: missing (expected: the id of one of red_flags.rules)");
                    } else {
                        rule = in.string(ruleNode, path + ".rule");
                        if (rule != null && !ids.contains(rule)) {
                            in.error(ruleNode.loc(), path + ".rule: " + rule + " (expected: the id of one of red_flags.rules)");
                        }
                    }
                    String host = null;
                    Node hostNode = value(s, "host");
                    if (hostNode != null) {
                        String h = in.string(hostNode, path + ".host");
                        if (h != null) {
                            try {
                                host = dev.sluice.rules.target.TargetParser.canonicalHost(h, 443).host();
                            } catch (dev.sluice.rules.target.MalformedTargetException e) {
                                in.error(hostNode.loc(), path + ".host: " + h + " (expected: a host name)");
                            }
                        }
                    }
                    String prefix = null;
                    Node prefixNode = value(s, "path_prefix");
                    if (prefixNode != null) {
                        prefix = in.string(prefixNode, path + ".path_prefix");
                        if (prefix != null && !prefix.startsWith("/")) {
                            in.error(prefixNode.loc(), path + ".path_prefix: " + prefix + " (expected: a path starting with /)");
                        }
                    }
                    if (rule != null) {
                        suppress.add(new dev.sluice.rules.redflag.RedFlagSettings.Suppression(rule, host, prefix));
                    }
                }
            }
        }
        if (in.errors.size() != before) {
            return null;
        }
        return new dev.sluice.rules.redflag.RedFlagSettings(rules, suppress);
    }

    dev.sluice.rules.redflag.RedFlagRule redFlagRule(Node node, String path, Set<String> ids,
                                                      dev.sluice.rules.redflag.RedFlagAction action,
                                                      dev.sluice.rules.redflag.RedFlagDirection direction,
                                                      List<String> internalDomains) {
        if (node instanceof ScalarNode) {
            String id = in.string(node, path);
            if (id == null) {
                return null;
            }
            java.util.Optional<dev.sluice.rules.redflag.RedFlagDetector> d =
                    dev.sluice.rules.redflag.BuiltinRedFlags.byId(id, internalDomains);
            if (d.isEmpty()) {
                in.error(node.loc(), path + ": " + id + " (expected: one of "
                        + String.join(", ", dev.sluice.rules.redflag.BuiltinRedFlags.IDS) + ", or {id, pattern, keywords})");
                return null;
            }
            if (!ids.add(id)) {
                in.error(node.loc(), path + ": " + id + " listed twice");
                return null;
            }
            return new dev.sluice.rules.redflag.RedFlagRule(d.get(), action, direction);
        }
        MapNode m = in.map(node, path);
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, path + ".", RED_FLAG_RULE_KEYS, Set.of());
        dev.sluice.rules.redflag.RedFlagAction a = redFlagAction(value(m, "action"), path + ".action", action);
        dev.sluice.rules.redflag.RedFlagDirection dir = redFlagDirection(value(m, "direction"), path + ".direction",
                direction);
        Node idNode = value(m, "id");
        if (idNode == null) {
            in.error(m.loc(), path + ".id: missing (expected: a built-in id, or a new id such as acme-project)");
            return null;
        }
        String id = in.string(idNode, path + ".id");
        if (id == null) {
            return null;
        }
        if (!ids.add(id)) {
            in.error(idNode.loc(), path + ".id: " + id + " listed twice");
            return null;
        }
        java.util.Optional<dev.sluice.rules.redflag.RedFlagDetector> builtin =
                dev.sluice.rules.redflag.BuiltinRedFlags.byId(id, internalDomains);
        if (builtin.isPresent()) {
            if (value(m, "pattern") != null || value(m, "keywords") != null) {
                in.error(idNode.loc(), path + ".id: " + id
                        + " is a built-in rule (expected: no pattern or keywords, or a new id)");
                return null;
            }
            return in.errors.size() != before ? null : new dev.sluice.rules.redflag.RedFlagRule(builtin.get(), a, dir);
        }
        if (!RedactionSection.CUSTOM_ID.matcher(id).matches()) {
            in.error(idNode.loc(), path + ".id: " + id + " (expected: " + RedactionSection.CUSTOM_ID.pattern() + ")");
            return null;
        }
        // pattern and keywords are validated as a custom redaction detector's are
        Set<String> scratch = new LinkedHashSet<>();
        Pattern pattern = in.customPattern(m, path);
        List<String> keywords = in.customKeywords(m, path);
        if (in.errors.size() != before || pattern == null || keywords.isEmpty()) {
            return null;
        }
        return new dev.sluice.rules.redflag.RedFlagRule(
                dev.sluice.rules.redflag.BuiltinRedFlags.custom(id, pattern, keywords), a, dir);
    }

    dev.sluice.rules.redflag.RedFlagAction redFlagAction(Node node, String path,
                                                          dev.sluice.rules.redflag.RedFlagAction dflt) {
        if (node == null) {
            return dflt;
        }
        String a = in.string(node, path);
        if (a == null) {
            return dflt;
        }
        return switch (a) {
            case "log" -> dev.sluice.rules.redflag.RedFlagAction.LOG;
            case "alert" -> dev.sluice.rules.redflag.RedFlagAction.ALERT;
            case "block" -> dev.sluice.rules.redflag.RedFlagAction.BLOCK;
            default -> {
                in.error(node.loc(), path + ": " + a + " (expected: log, alert or block)");
                yield dflt;
            }
        };
    }

    dev.sluice.rules.redflag.RedFlagDirection redFlagDirection(Node node, String path,
                                                                dev.sluice.rules.redflag.RedFlagDirection dflt) {
        if (node == null) {
            return dflt;
        }
        String d = in.string(node, path);
        if (d == null) {
            return dflt;
        }
        return switch (d) {
            case "request" -> dev.sluice.rules.redflag.RedFlagDirection.REQUEST;
            case "response" -> dev.sluice.rules.redflag.RedFlagDirection.RESPONSE;
            case "both" -> dev.sluice.rules.redflag.RedFlagDirection.BOTH;
            default -> {
                in.error(node.loc(), path + ": " + d + " (expected: request, response or both)");
                yield dflt;
            }
        };
    }
}
