package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.NAME;
import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads {@code include} (docs/policy.md "include"): each fragment in order, merged into the policy's
 * groups and extensions; a fragment is read with a cursor of its own (its file, its rule id prefix).
 */
final class IncludeSection {

    /** What a fragment named by {@code include} may contain (docs/policy.md "include"). */
    static final Set<String> FRAGMENT_KEYS = orderedSet("include", "groups", "extensions");
    static final Set<String> FRAGMENT_EXTENSION_KEYS = orderedSet("allow", "groups");

    private final PolicyCursor in;
    private final RulesSection rules;
    private final ExtensionsSection extensionsSection;

    IncludeSection(PolicyCursor in) {
        this.in = in;
        this.rules = new RulesSection(in);
        this.extensionsSection = new ExtensionsSection(in, rules);
    }

    /**
     * Reads the fragments listed by an {@code include} node, in order, and merges them into
     * {@code groups} and {@code extensions}. {@code chain} is the files that led here (for cycles).
     */
    void includes(@Nullable Node node, Map<String, List<Rule>> groups, Map<String, Extension> extensions, List<Path> chain) {
        if (node == null || isNull(node)) {
            return;
        }
        ListNode list = in.list(node, "include");
        if (list == null) {
            return;
        }
        Path base = in.file == null ? Path.of("").toAbsolutePath() : in.file.toAbsolutePath().getParent();
        for (int i = 0; i < list.items().size(); i++) {
            Node item = list.items().get(i);
            String where = "include[" + i + "]";
            String name = in.string(item, where);
            if (name == null) {
                continue;
            }
            if (name.isEmpty()) {
                in.error(item.loc(), where + ": empty (expected: a path to a policy fragment)");
                continue;
            }
            Path target;
            try {
                target = base.resolve(name).normalize();
            } catch (InvalidPathException e) {
                in.error(item.loc(), where + ": " + name + ": bad path (expected: a path to a policy fragment)");
                continue;
            }
            if (chain.contains(target)) {
                List<String> cycle = new ArrayList<>();
                for (Path p : chain.subList(chain.indexOf(target), chain.size())) {
                    cycle.add(p.getFileName().toString());
                }
                cycle.add(target.getFileName().toString());
                in.error(item.loc(), where + ": " + name + " is already being included (cycle: "
                        + String.join(" -> ", cycle) + ") (expected: fragments that include no file that includes them)");
                continue;
            }
            if (in.included.contains(target)) {
                in.error(item.loc(), where + ": " + name + " is included twice (expected: each fragment once)");
                continue;
            }
            byte[] bytes;
            try {
                bytes = Files.readAllBytes(target);
            } catch (IOException e) {
                in.error(item.loc(), where + ": cannot read " + target + ": " + e.getClass().getSimpleName()
                        + " (expected: an existing, readable policy fragment)");
                continue;
            }
            String text;
            try {
                text = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(bytes)).toString();
            } catch (CharacterCodingException e) {
                in.errors.add(new PolicyError(target.toString(), 0, 0, "not valid UTF-8 (expected: a UTF-8 text file)"));
                continue;
            }
            in.included.add(target);
            in.includedSha.add(PolicyLoader.sha256Hex(bytes));
            IncludeSection child = new IncludeSection(in.child(target, name + ":"));
            List<YamlTree.Problem> problems = new ArrayList<>();
            Node root = YamlTree.read(text, problems);
            if (root == null && problems.size() == 1 && problems.get(0).message().startsWith("empty document")) {
                continue; // an empty fragment (or one of comments only) adds nothing
            }
            for (YamlTree.Problem p : problems) {
                in.errors.add(new PolicyError(child.in.source, p.loc().line(), p.loc().column(), p.message()));
            }
            if (root != null && problems.isEmpty()) {
                List<Path> next = new ArrayList<>(chain);
                next.add(target);
                child.fragment(root, groups, extensions, next);
            }
        }
    }

    /**
     * Reads one fragment: {@code groups} (new names only), {@code extensions.<name>.allow} and
     * {@code .groups} for extensions the policy defines, then its own {@code include}. With
     * {@code extensions == null} (a fragment checked alone) names are not checked against a policy.
     */
    void fragment(Node root, Map<String, List<Rule>> groups, @Nullable Map<String, Extension> extensions, @Nullable List<Path> chain) {
        if (isNull(root)) {
            return; // an empty fragment adds nothing
        }
        MapNode top = in.map(root, "fragment");
        if (top == null) {
            return;
        }
        for (YamlTree.Entry e : top.entries().values()) {
            if (!FRAGMENT_KEYS.contains(e.key())) {
                in.error(e.keyLoc(), e.key() + ": not allowed in a fragment (expected one of: "
                        + String.join(", ", FRAGMENT_KEYS) + "; every other section belongs to the main policy file)");
            }
        }
        Map<String, List<Rule>> own = extensionsSection.groups(value(top, "groups"));
        for (Map.Entry<String, List<Rule>> g : own.entrySet()) {
            YamlTree.Entry entry = ((MapNode) value(top, "groups")).entries().get(g.getKey());
            if (groups.containsKey(g.getKey())) {
                in.error(entry.keyLoc(), "groups." + g.getKey() + ": already defined (expected: a new group name;"
                        + " a fragment cannot change a group defined elsewhere)");
            } else {
                groups.put(g.getKey(), g.getValue());
            }
        }
        Node extNode = value(top, "extensions");
        if (extNode != null && !isNull(extNode)) {
            MapNode m = in.map(extNode, "extensions");
            if (m != null) {
                for (YamlTree.Entry e : m.entries().values()) {
                    String name = e.key();
                    String path = "extensions." + name;
                    Extension existing = extensions == null ? null : extensions.get(name);
                    if (extensions != null && existing == null) {
                        in.error(e.keyLoc(), path + ": not defined by the policy (expected one of: "
                                + (extensions.isEmpty() ? "none defined" : String.join(", ", extensions.keySet()))
                                + "; a fragment adds rules to extensions the policy defines)");
                        continue;
                    } else if (!NAME.matcher(name).matches()) {
                        in.error(e.keyLoc(), path + ": bad extension name (expected: " + NAME.pattern() + ")");
                        continue;
                    }
                    if (isNull(e.value())) {
                        continue;
                    }
                    MapNode x = in.map(e.value(), path);
                    if (x == null) {
                        continue;
                    }
                    for (YamlTree.Entry k : x.entries().values()) {
                        if (!FRAGMENT_EXTENSION_KEYS.contains(k.key())) {
                            in.error(k.keyLoc(), path + "." + k.key() + ": not allowed in a fragment (expected one of: "
                                    + String.join(", ", FRAGMENT_EXTENSION_KEYS) + "; identity and deny rules belong to the main policy file)");
                        }
                    }
                    List<Rule> added = new ArrayList<>(rules.rules(value(x, "allow"), in.idPrefix + path + ".allow", false));
                    Node groupsNode = value(x, "groups");
                    if (groupsNode != null && !isNull(groupsNode)) {
                        ListNode list = in.list(groupsNode, path + ".groups");
                        if (list != null) {
                            for (int i = 0; i < list.items().size(); i++) {
                                Node g = list.items().get(i);
                                String gname = in.string(g, path + ".groups[" + i + "]");
                                if (gname == null) {
                                    continue;
                                }
                                if (groups.containsKey(gname)) {
                                    added.addAll(groups.get(gname));
                                } else if (extensions != null) {
                                    in.error(g.loc(), path + ".groups[" + i + "]: " + gname + " is not defined (expected one of: "
                                            + (groups.isEmpty() ? "none defined under groups" : String.join(", ", groups.keySet())) + ")");
                                }
                            }
                        }
                    }
                    if (existing != null && !added.isEmpty()) {
                        List<Rule> allow = new ArrayList<>(existing.allow());
                        allow.addAll(added);
                        extensions.put(name, new Extension(name, existing.tokenSha256(), existing.sources(), allow,
                                existing.deny(), existing.credentials()));
                    }
                }
            }
        }
        if (chain != null) {
            includes(value(top, "include"), groups, extensions, chain);
        }
    }
}
