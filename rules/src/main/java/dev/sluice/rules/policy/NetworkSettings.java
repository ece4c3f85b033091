package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;

/**
 * The {@code network} section.
 *
 * @param allowPrivate prefixes that opt in past the address-class block (never metadata or unspecified
 *                     addresses, never Sluice's own listeners); IPv4 prefixes also cover IPv4-mapped answers
 * @param hosts static answers: canonical name → address, consulted before DNS and classified like any answer
 * @param resolvers DNS servers to ask; empty means the system's (/etc/resolv.conf)
 */
public record NetworkSettings(List<Cidr> allowPrivate, Map<String, InetAddress> hosts, List<InetSocketAddress> resolvers) {
    public NetworkSettings {
        allowPrivate = List.copyOf(allowPrivate);
        hosts = Map.copyOf(hosts);
        resolvers = List.copyOf(resolvers);
    }
}
