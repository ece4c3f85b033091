package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import java.util.List;
import java.util.Set;

/**
 * One allow or deny entry of the policy file. Exactly one of {@code host} and {@code cidr} is set.
 *
 * @param id where it was written, e.g. {@code extensions.github.allow[2]} or {@code groups.llm[0]}
 * @param host canonical host pattern: an exact name ({@code api.github.com}) or {@code *.suffix}
 *             (subdomains only, never the apex); null for a CIDR rule
 * @param cidr the prefix for IP-literal targets; null for a host rule
 * @param ports allowed TCP ports; empty means the default ports {@code [80, 443]}
 * @param methods allowed methods (upper case); empty means any
 * @param paths path globs ({@code *} one segment, {@code **} any depth); empty means any
 */
public record Rule(String id, String host, Cidr cidr, Set<Integer> ports, Set<String> methods, List<String> paths) {

    public Rule {
        ports = Set.copyOf(ports);
        methods = Set.copyOf(methods);
        paths = List.copyOf(paths);
    }
}
