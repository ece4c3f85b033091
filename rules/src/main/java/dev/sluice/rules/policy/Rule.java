package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import java.util.List;
import java.util.Set;

/**
 * One allow or deny entry of the policy file. Exactly one of {@code host} and {@code cidr} is set.
 *
 * <p>Rule ids name where the rule was written: {@code extensions.<ext>.allow[<i>]},
 * {@code extensions.<ext>.deny[<i>]}, {@code groups.<group>[<i>]}, {@code deny[<i>]} (global), with
 * 0-based indexes. A group's rules keep their {@code groups.} id in every extension that lists the group.
 *
 * @param id where it was written, e.g. {@code extensions.github.allow[2]} or {@code groups.llm[0]}
 * @param host canonical host pattern: an exact name ({@code api.github.com}) or {@code *.suffix}
 *             (subdomains only, never the apex); null for a CIDR rule
 * @param cidr the prefix for IP-literal targets only (a name is never matched by its resolved
 *             addresses); null for a host rule
 * @param ports TCP ports; empty means: for an allow rule the default ports {@code [80, 443]}, for a deny
 *              rule every port
 * @param methods methods (upper case, compared case-sensitively); empty means any
 * @param paths path globs ({@code *} within one segment, {@code **} any depth); empty means any
 * @param tlsOnly {@code tls_only}: whether a blind tunnel this rule allows must start with a TLS
 *                ClientHello; null when not written, meaning true on port 443 and false on any other
 *                port ({@link #tlsOnlyOn})
 */
public record Rule(String id, String host, Cidr cidr, Set<Integer> ports, Set<String> methods, List<String> paths,
                   Boolean tlsOnly) {

    public Rule {
        ports = Set.copyOf(ports);
        methods = Set.copyOf(methods);
        paths = List.copyOf(paths);
    }

    /** A rule without {@code tls_only} (the default: TLS-only on port 443). */
    public Rule(String id, String host, Cidr cidr, Set<Integer> ports, Set<String> methods, List<String> paths) {
        this(id, host, cidr, ports, methods, paths, null);
    }

    /** Answers whether a tunnel this rule allows on {@code port} must start with a TLS ClientHello. */
    public boolean tlsOnlyOn(int port) {
        return tlsOnly != null ? tlsOnly : port == 443;
    }
}
