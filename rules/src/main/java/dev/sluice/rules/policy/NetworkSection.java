package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code network} (docs/policy.md "network"): private ranges allowed, static hosts, resolvers, internal domains. */
final class NetworkSection {

    static final Set<String> NETWORK_KEYS = orderedSet("allow_private", "hosts", "resolvers",
            "internal_domains");

    private final PolicyCursor in;

    NetworkSection(PolicyCursor in) {
        this.in = in;
    }

    NetworkSettings network(@Nullable Node node) {
        List<Cidr> allowPrivate = new ArrayList<>();
        Map<String, InetAddress> hosts = new LinkedHashMap<>();
        List<InetSocketAddress> resolvers = new ArrayList<>();
        if (node != null && !isNull(node)) {
            MapNode m = in.map(node, "network");
            if (m != null) {
                in.checkKeys(m, "network.", NETWORK_KEYS, Set.of());
                for (PolicyCursor.Item<Cidr> c : in.cidrs(value(m, "allow_private"), "network.allow_private")) {
                    allowPrivate.add(c.value);
                }
                Node hostsNode = value(m, "hosts");
                if (hostsNode != null && !isNull(hostsNode)) {
                    MapNode hm = in.map(hostsNode, "network.hosts");
                    if (hm != null) {
                        for (YamlTree.Entry e : hm.entries().values()) {
                            String path = "network.hosts." + e.key();
                            String name = null;
                            try {
                                Target t = TargetParser.canonicalHost(e.key(), 1);
                                if (t.isIpLiteral()) {
                                    in.error(e.keyLoc(), path + ": an IP literal (expected: a DNS name)");
                                } else {
                                    name = t.host();
                                }
                            } catch (MalformedTargetException ex) {
                                in.error(e.keyLoc(), path + ": " + ex.getMessage());
                            }
                            String text = in.string(e.value(), path);
                            InetAddress address = text == null ? null : IpAddresses.parseStrict(text);
                            if (text != null && address == null) {
                                in.error(e.value().loc(), path + ": " + text + " (expected: an IP address such as 10.0.0.5 or fd00::5)");
                            }
                            if (name != null && address != null && hosts.putIfAbsent(name, address) != null) {
                                in.error(e.keyLoc(), path + ": same name as an earlier entry (" + name + ")");
                            }
                        }
                    }
                }
                Node resolversNode = value(m, "resolvers");
                if (resolversNode != null && !isNull(resolversNode)) {
                    ListNode list = in.list(resolversNode, "network.resolvers");
                    if (list != null) {
                        for (int i = 0; i < list.items().size(); i++) {
                            InetSocketAddress a = in.socket(list.items().get(i), "network.resolvers[" + i + "]", 53);
                            if (a != null) {
                                resolvers.add(a);
                            }
                        }
                    }
                }
            }
        }
        return new NetworkSettings(allowPrivate, hosts, resolvers);
    }

    /** {@code network.internal_domains}: lowercase domain names (validated here; the rest of network elsewhere). */
    List<String> internalDomains(Node network) {
        List<String> out = new ArrayList<>();
        if (!(network instanceof MapNode m)) {
            return out;
        }
        Node node = value(m, "internal_domains");
        if (node == null || isNull(node)) {
            return out;
        }
        ListNode list = in.list(node, "network.internal_domains");
        if (list == null) {
            return out;
        }
        for (int i = 0; i < list.items().size(); i++) {
            Node item = list.items().get(i);
            String d = in.string(item, "network.internal_domains[" + i + "]");
            if (d == null) {
                continue;
            }
            String lower = d.toLowerCase(Locale.ROOT);
            if (!lower.matches("(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")) {
                in.error(item.loc(), "network.internal_domains[" + i + "]: " + d + " (expected: a domain name such as corp.example)");
            } else {
                out.add(lower);
            }
        }
        return out;
    }
}
