package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.NAME;
import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.scalarText;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Reads {@code groups} and {@code extensions} (docs/policy.md "extensions.&lt;name&gt;"), and checks
 * that every credential an extension is granted is defined once {@code credentials} is read.
 */
final class ExtensionsSection {

    static final Set<String> EXTENSION_KEYS = orderedSet("auth", "sources", "allow", "deny", "groups",
            "credentials");
    static final Set<String> AUTH_KEYS = orderedSet("token_sha256");
    static final Pattern HEX64 = Pattern.compile("[0-9a-fA-F]{64}");

    private final PolicyCursor in;
    private final RulesSection rules;
    /** Each extension's {@code credentials} entries with where they were written, checked once credentials are read. */
    private final List<Object[]> credentialRefs = new ArrayList<>(); // {String path, String name, Loc}

    ExtensionsSection(PolicyCursor in, RulesSection rules) {
        this.in = in;
        this.rules = rules;
    }

    Map<String, List<Rule>> groups(@Nullable Node node) {
        Map<String, List<Rule>> groups = new LinkedHashMap<>();
        if (node == null || isNull(node)) {
            return groups;
        }
        MapNode m = in.map(node, "groups");
        if (m == null) {
            return groups;
        }
        for (YamlTree.Entry e : m.entries().values()) {
            String path = in.idPrefix + "groups." + e.key();
            if (!NAME.matcher(e.key()).matches()) {
                in.error(e.keyLoc(), path + ": bad group name (expected: " + NAME.pattern() + ")");
            }
            groups.put(e.key(), rules.rules(e.value(), path, false));
        }
        return groups;
    }

    Map<String, Extension> extensions(@Nullable Node node, Map<String, List<Rule>> groups) {
        Map<String, Extension> extensions = new LinkedHashMap<>();
        if (node == null || isNull(node)) {
            return extensions;
        }
        MapNode m = in.map(node, "extensions");
        if (m == null) {
            return extensions;
        }
        Map<String, Loc> tokenOwners = new LinkedHashMap<>();
        List<Object[]> sourceOwners = new ArrayList<>(); // {extension, Cidr, Loc}
        for (YamlTree.Entry e : m.entries().values()) {
            String name = e.key();
            String path = "extensions." + name;
            if (!NAME.matcher(name).matches()) {
                in.error(e.keyLoc(), path + ": bad extension name (expected: " + NAME.pattern() + ")");
            }
            if (isNull(e.value())) {
                extensions.put(name, new Extension(name, null, List.of(), List.of(), List.of()));
                continue;
            }
            MapNode x = in.map(e.value(), path);
            if (x == null) {
                continue;
            }
            in.checkKeys(x, path + ".", EXTENSION_KEYS, Set.of());
            byte[] token = null;
            Node authNode = value(x, "auth");
            if (authNode != null && !isNull(authNode)) {
                MapNode auth = in.map(authNode, path + ".auth");
                if (auth != null) {
                    in.checkKeys(auth, path + ".auth.", AUTH_KEYS, Set.of());
                    Node t = value(auth, "token_sha256");
                    if (t == null) {
                        in.error(auth.loc(), path + ".auth.token_sha256: missing (expected: 64 hex digits, see `sluice token new`)");
                    } else {
                        // any scalar: an unquoted all-digit hash is read by YAML as a number
                        String hex = t instanceof ScalarNode && !isNull(t) ? scalarText(t) : in.string(t, path + ".auth.token_sha256");
                        if (hex != null) {
                            if (!HEX64.matcher(hex).matches()) {
                                in.error(t.loc(), path + ".auth.token_sha256: " + hex.length()
                                        + " characters (expected: 64 hex digits, the SHA-256 of the token)");
                            } else {
                                String lower = hex.toLowerCase(Locale.ROOT);
                                Loc previous = tokenOwners.putIfAbsent(lower, t.loc());
                                if (previous != null) {
                                    in.error(t.loc(), path + ".auth.token_sha256: same token as the extension at line "
                                            + previous.line() + " (expected: one token per extension)");
                                }
                                token = HexFormat.of().parseHex(lower);
                            }
                        }
                    }
                }
            }
            List<Cidr> sources = new ArrayList<>();
            for (PolicyCursor.Item<Cidr> c : in.cidrs(value(x, "sources"), path + ".sources")) {
                for (Object[] other : sourceOwners) {
                    Cidr o = (Cidr) other[1];
                    if (!other[0].equals(name) && RulesSection.overlaps(o, c.value)) {
                        in.error(c.loc, path + ".sources: " + c.value + " overlaps " + o + " of extension "
                                + other[0] + " (expected: each source address identifies one extension)");
                    }
                }
                sourceOwners.add(new Object[] {name, c.value, c.loc});
                sources.add(c.value);
            }
            List<Rule> allow = new ArrayList<>(rules.rules(value(x, "allow"), path + ".allow", false));
            List<Rule> deny = rules.rules(value(x, "deny"), path + ".deny", true);
            Node groupsNode = value(x, "groups");
            if (groupsNode != null && !isNull(groupsNode)) {
                ListNode list = in.list(groupsNode, path + ".groups");
                if (list != null) {
                    Set<String> seen = new LinkedHashSet<>();
                    for (int i = 0; i < list.items().size(); i++) {
                        Node g = list.items().get(i);
                        String gname = in.string(g, path + ".groups[" + i + "]");
                        if (gname == null) {
                            continue;
                        }
                        if (!seen.add(gname)) {
                            in.error(g.loc(), path + ".groups[" + i + "]: " + gname + " listed twice");
                        } else if (!groups.containsKey(gname)) {
                            in.error(g.loc(), path + ".groups[" + i + "]: " + gname + " is not defined (expected one of: "
                                    + (groups.isEmpty() ? "none defined under groups" : String.join(", ", groups.keySet())) + ")");
                        } else {
                            allow.addAll(groups.get(gname));
                        }
                    }
                }
            }
            List<String> granted = credentialNames(value(x, "credentials"), path + ".credentials");
            extensions.put(name, new Extension(name, token, sources, allow, deny, granted));
        }
        return extensions;
    }

    List<String> credentialNames(@Nullable Node node, String path) {
        List<String> names = new ArrayList<>();
        if (node == null || isNull(node)) {
            return names;
        }
        ListNode list = in.list(node, path);
        if (list == null) {
            return names;
        }
        for (int i = 0; i < list.items().size(); i++) {
            Node item = list.items().get(i);
            String where = path + "[" + i + "]";
            String name = in.string(item, where);
            if (name == null) {
                continue;
            }
            if (names.contains(name)) {
                in.error(item.loc(), where + ": " + name + " listed twice");
                continue;
            }
            names.add(name);
            credentialRefs.add(new Object[] {where, name, item.loc()});
        }
        return names;
    }

    /**
     * Reports each grant of a credential that is not defined; a credential that is declared but has errors
     * of its own ({@code declared}) is not reported again.
     */
    void checkCredentialGrants(Map<String, Credential> credentials, Set<String> declared) {
        for (Object[] ref : credentialRefs) {
            if (!credentials.containsKey((String) ref[1]) && !declared.contains((String) ref[1])) {
                in.error((Loc) ref[2], ref[0] + ": " + ref[1] + " is not defined (expected one of: "
                        + (credentials.isEmpty() ? "none defined under credentials"
                        : String.join(", ", credentials.keySet())) + ")");
            }
        }
    }
}
