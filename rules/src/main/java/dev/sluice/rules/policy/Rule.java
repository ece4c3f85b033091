package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

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
 * @param methods methods (upper case, compared case-sensitively); empty means any. {@code HEAD} is
 *                implied wherever {@code GET} is listed ({@link #matchesMethod}); a deny rule listing
 *                {@code HEAD} takes it away again
 * @param paths path globs ({@code *} within one segment, {@code **} any depth); empty means any
 * @param tlsOnly {@code tls_only}: whether a blind tunnel this rule allows must start with a TLS
 *                ClientHello; null when not written, meaning true on port 443 and false on any other
 *                port ({@link #tlsOnlyOn})
 */
public record Rule(String id, @Nullable String host, @Nullable Cidr cidr, Set<Integer> ports, Set<String> methods, List<String> paths,
                   @Nullable Boolean tlsOnly) {

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

    /**
     * Returns whether {@code method} is one this rule names: any method when {@code methods} is empty,
     * else a listed one, with {@code HEAD} counted as listed wherever {@code GET} is (RFC 9110 section
     * 9.3.2: HEAD is GET without the content, so it reveals nothing GET would not). This holds for
     * deny rules too: a rule denying {@code GET} also denies {@code HEAD}.
     *
     * @param method an upper-case request method, e.g. {@code GET}
     */
    public boolean matchesMethod(String method) {
        return methods.isEmpty() || methods.contains(method) || ("HEAD".equals(method) && methods.contains("GET"));
    }

    /** Returns {@code methods} with the implied {@code HEAD} added where {@code GET} is listed (empty = any). */
    public Set<String> effectiveMethods() {
        if (!methods.contains("GET") || methods.contains("HEAD")) {
            return methods;
        }
        java.util.Set<String> all = new java.util.HashSet<>(methods);
        all.add("HEAD");
        return Set.copyOf(all);
    }
}
