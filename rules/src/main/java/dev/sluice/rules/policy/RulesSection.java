package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.TOKEN;
import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.PathGlob;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads allow and deny rule lists (docs/policy.md "Rules") wherever they stand (extensions, groups,
 * the global {@code deny}, fragments) and reports rules an earlier rule of the same list shadows.
 */
final class RulesSection {

    static final Set<String> RULE_KEYS = orderedSet("host", "cidr", "ports", "methods", "paths", "tls_only");

    private final PolicyCursor in;
    /** Where each rule this reader made was written, by rule id (for the shadowing errors). */
    private final Map<String, Loc> ruleLocs = new java.util.HashMap<>();

    RulesSection(PolicyCursor in) {
        this.in = in;
    }

    List<Rule> rules(@Nullable Node node, String path, boolean deny) {
        List<Rule> rules = new ArrayList<>();
        if (node == null || isNull(node)) {
            return rules;
        }
        ListNode list = in.list(node, path);
        if (list == null) {
            return rules;
        }
        for (int i = 0; i < list.items().size(); i++) {
            Rule rule = rule(list.items().get(i), path + "[" + i + "]", deny);
            if (rule != null) {
                rules.add(rule);
                ruleLocs.put(rule.id(), list.items().get(i).loc());
            }
        }
        checkShadowing(rules, deny);
        return rules;
    }

    /**
     * Reports every rule that an earlier rule of the same list already covers (same or broader
     * host or prefix, its ports, methods and paths included): such a rule can never be the first
     * match, so it is dead or misplaced. Identical rules are reported as duplicates.
     */
    void checkShadowing(List<Rule> rules, boolean deny) {
        Map<String, List<Integer>> byHost = new java.util.HashMap<>();
        Map<Cidr, List<Integer>> byCidr = new java.util.HashMap<>();
        for (int i = 0; i < rules.size(); i++) {
            Rule r = rules.get(i);
            int coverer = -1;
            for (int c : shadowCandidates(r, byHost, byCidr)) {
                if ((coverer < 0 || c < coverer) && covers(rules.get(c), r, deny)) {
                    coverer = c;
                }
            }
            if (coverer >= 0) {
                Rule e = rules.get(coverer);
                Loc loc = ruleLocs.getOrDefault(r.id(), new Loc(0, 0));
                if (sameMatch(e, r, deny)) {
                    in.error(loc, r.id() + ": duplicate of " + e.id() + " (expected: each rule once)");
                } else {
                    in.error(loc, r.id() + ": shadowed by " + e.id() + ", which already matches everything it matches"
                            + " (expected: remove it, or place it before " + e.id() + ")");
                }
            }
            if (r.host() != null) {
                byHost.computeIfAbsent(r.host(), k -> new ArrayList<>()).add(i);
            } else {
                byCidr.computeIfAbsent(r.cidr(), k -> new ArrayList<>()).add(i);
            }
        }
    }

    private static List<Integer> shadowCandidates(Rule r, Map<String, List<Integer>> byHost,
                                                  Map<Cidr, List<Integer>> byCidr) {
        List<Integer> out = new ArrayList<>();
        if (r.host() != null) {
            out.addAll(byHost.getOrDefault(r.host(), List.of()));
            String name = r.host().startsWith("*.") ? r.host().substring(2) : r.host();
            for (int dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
                out.addAll(byHost.getOrDefault("*." + name.substring(dot + 1), List.of()));
            }
            return out;
        }
        byte[] a = r.cidr().network().getAddress();
        for (int len = 0; len <= r.cidr().prefixLength(); len++) {
            byte[] m = a.clone();
            for (int bit = len; bit < m.length * 8; bit++) {
                m[bit / 8] &= (byte) ~(0x80 >>> (bit % 8));
            }
            Cidr c = new Cidr(m.length == 4 ? IpAddresses.inet4(m) : IpAddresses.inet6(m), len);
            out.addAll(byCidr.getOrDefault(c, List.of()));
        }
        return out;
    }

    @Nullable Rule rule(Node node, String id, boolean deny) {
        MapNode m = in.map(node, id);
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, id + ".", RULE_KEYS, Set.of());
        Node hostNode = value(m, "host");
        Node cidrNode = value(m, "cidr");
        String host = null;
        Cidr cidr = null;
        if ((hostNode == null) == (cidrNode == null)) {
            in.error(m.loc(), id + ": " + (hostNode == null ? "neither host nor cidr" : "both host and cidr")
                    + " (expected: exactly one of host, cidr)");
        }
        if (hostNode != null) {
            host = in.hostPattern(hostNode, id + ".host");
        }
        if (cidrNode != null) {
            String text = in.string(cidrNode, id + ".cidr");
            if (text != null) {
                try {
                    cidr = Cidr.parse(text);
                } catch (IllegalArgumentException e) {
                    in.error(cidrNode.loc(), id + ".cidr: " + e.getMessage());
                }
            }
        }
        Set<Integer> ports = new LinkedHashSet<>();
        Node portsNode = value(m, "ports");
        if (portsNode != null) {
            ListNode list = in.list(portsNode, id + ".ports");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), id + ".ports: empty (expected: at least one port; omit ports for "
                            + (deny ? "every port" : "the default 80, 443") + ")");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    Node p = list.items().get(i);
                    long port = in.integer(p, id + ".ports[" + i + "]", -1, 1, 65535);
                    if (port > 0 && !ports.add((int) port)) {
                        in.error(p.loc(), id + ".ports[" + i + "]: " + port + " listed twice");
                    }
                }
            }
        }
        Set<String> methods = new LinkedHashSet<>();
        Node methodsNode = value(m, "methods");
        if (methodsNode != null) {
            ListNode list = in.list(methodsNode, id + ".methods");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), id + ".methods: empty (expected: at least one method; omit methods for any)");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    Node mn = list.items().get(i);
                    String method = in.string(mn, id + ".methods[" + i + "]");
                    if (method == null) {
                        continue;
                    }
                    if (!TOKEN.matcher(method).matches() || !method.equals(method.toUpperCase(Locale.ROOT))) {
                        in.error(mn.loc(), id + ".methods[" + i + "]: " + method
                                + " (expected: an upper-case method such as GET; methods are case-sensitive)");
                    } else if (!methods.add(method)) {
                        in.error(mn.loc(), id + ".methods[" + i + "]: " + method + " listed twice");
                    }
                }
            }
        }
        List<String> paths = new ArrayList<>();
        Node pathsNode = value(m, "paths");
        if (pathsNode != null) {
            ListNode list = in.list(pathsNode, id + ".paths");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), id + ".paths: empty (expected: at least one glob; omit paths for any)");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    Node pn = list.items().get(i);
                    String glob = in.string(pn, id + ".paths[" + i + "]");
                    if (glob == null) {
                        continue;
                    }
                    String problem = PathGlob.validate(glob);
                    if (problem != null) {
                        in.error(pn.loc(), id + ".paths[" + i + "]: " + glob + " " + problem);
                    } else if (paths.contains(glob)) {
                        in.error(pn.loc(), id + ".paths[" + i + "]: " + glob + " listed twice");
                    } else {
                        paths.add(glob);
                    }
                }
            }
        }
        Boolean tlsOnly = null;
        Node tlsOnlyNode = value(m, "tls_only");
        if (tlsOnlyNode != null && deny) {
            in.error(tlsOnlyNode.loc(), id + ".tls_only: only allow rules take tls_only (a deny rule denies every tunnel)");
        } else if (tlsOnlyNode != null) {
            if (tlsOnlyNode instanceof ScalarNode scalar
                    && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                tlsOnly = scalar.token() == JsonToken.VALUE_TRUE;
            } else {
                in.error(tlsOnlyNode.loc(), id + ".tls_only: " + show(tlsOnlyNode) + " (expected: true or false)");
            }
        }
        if (in.errors.size() != before || (host == null) == (cidr == null)) {
            return null;
        }
        return new Rule(id, host, cidr, ports, methods, paths, tlsOnly);
    }

    /** Answers whether every request rule {@code b} matches is matched by {@code a} as well. */
    static boolean covers(Rule a, Rule b, boolean deny) {
        if (!targetCovers(a, b)) {
            return false;
        }
        if (!a.ports().isEmpty()) {
            Set<Integer> bPorts = b.ports().isEmpty() ? (deny ? null : Set.of(80, 443)) : b.ports();
            if (bPorts == null || !a.ports().containsAll(bPorts)) {
                return false;
            }
        } else if (!deny && !b.ports().isEmpty() && !Set.of(80, 443).containsAll(b.ports())) {
            return false;
        }
        if (!a.methods().isEmpty() && (b.methods().isEmpty() || !a.effectiveMethods().containsAll(b.effectiveMethods()))) {
            return false;
        }
        return a.paths().isEmpty() || (!b.paths().isEmpty() && a.paths().containsAll(b.paths()));
    }

    private static boolean sameMatch(Rule a, Rule b, boolean deny) {
        return covers(a, b, deny) && covers(b, a, deny);
    }

    private static boolean targetCovers(Rule a, Rule b) {
        if (a.cidr() != null || b.cidr() != null) {
            return a.cidr() != null && b.cidr() != null && a.cidr().isIpv4() == b.cidr().isIpv4()
                    && a.cidr().prefixLength() <= b.cidr().prefixLength() && a.cidr().contains(b.cidr().network());
        }
        if (a.host().equals(b.host())) {
            return true;
        }
        if (!a.host().startsWith("*.")) {
            return false;
        }
        String suffix = a.host().substring(1); // ".example.com"
        String name = b.host().startsWith("*.") ? b.host().substring(1) : b.host();
        return name.endsWith(suffix) && name.length() > suffix.length();
    }

    static boolean overlaps(Cidr a, Cidr b) {
        return a.contains(b.network()) || b.contains(a.network());
    }
}
