package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.net.InetSocketAddress;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code listen} (docs/policy.md "listen"): the proxy, transparent, DNS and admin addresses. */
final class ListenSection {

    static final Set<String> LISTEN_KEYS = orderedSet("proxy", "transparent", "dns", "admin");

    private final PolicyCursor in;

    ListenSection(PolicyCursor in) {
        this.in = in;
    }

    ListenSettings listen(@Nullable Node node) {
        InetSocketAddress proxy = new InetSocketAddress(IpAddresses.inet4(0x7f000001), 3128);
        InetSocketAddress admin = new InetSocketAddress(IpAddresses.inet4(0x7f000001), 9901);
        InetSocketAddress transparent = null;
        InetSocketAddress dns = null;
        if (node != null && !isNull(node)) {
            MapNode m = in.map(node, "listen");
            if (m != null) {
                in.checkKeys(m, "listen.", LISTEN_KEYS, Set.of());
                Node p = value(m, "proxy");
                if (p != null) {
                    InetSocketAddress a = in.socket(p, "listen.proxy", -1);
                    proxy = a == null ? proxy : a;
                }
                Node ad = value(m, "admin");
                if (ad != null) {
                    InetSocketAddress a = in.socket(ad, "listen.admin", -1);
                    admin = a == null ? admin : a;
                }
                Node t = value(m, "transparent");
                if (t != null && !isNull(t)) {
                    transparent = in.socket(t, "listen.transparent", -1);
                }
                Node d = value(m, "dns");
                if (d != null && !isNull(d)) {
                    dns = in.socket(d, "listen.dns", 53);
                    if (dns != null && (transparent == null || transparent.getAddress().isAnyLocalAddress())) {
                        // The DNS responder answers allowed names with the transparent listener's address.
                        in.error(d.loc(), "listen.dns: needs listen.transparent with a specific address to answer"
                                + " with (expected: e.g. transparent: 10.200.0.1:15001, not 0.0.0.0 or absent)");
                    }
                }
            }
        }
        return new ListenSettings(proxy, transparent, dns, admin);
    }
}
