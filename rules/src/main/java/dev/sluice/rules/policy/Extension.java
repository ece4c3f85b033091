package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.RuleList;
import java.util.List;

/**
 * One extension (a sandboxed client identity) with its rules, groups already expanded.
 *
 * @param name the extension's name, used as-is in logs and metrics
 * @param tokenSha256 the 32-byte SHA-256 of its proxy token, or null when it has no explicit-mode auth
 * @param sources source prefixes that identify it in transparent mode
 * @param allow allow rules, own first, then each group's in the order listed
 * @param deny the extension's own deny rules
 *
 * <p>{@code allow} and {@code deny} are kept as immutable lists that also carry a lookup index (exact
 * names, suffixes, prefixes), so that deciding costs about the same for any number of rules.
 */
public record Extension(String name, byte[] tokenSha256, List<Cidr> sources, List<Rule> allow, List<Rule> deny) {

    public Extension {
        tokenSha256 = tokenSha256 == null ? null : tokenSha256.clone();
        sources = List.copyOf(sources);
        allow = RuleList.copyOf(allow);
        deny = RuleList.copyOf(deny);
    }

    /** The name of the extension that unidentified clients get, when the policy defines it. */
    public static final String DEFAULT = "default";

    @Override
    public byte[] tokenSha256() {
        return tokenSha256 == null ? null : tokenSha256.clone();
    }

    @Override
    public String toString() {
        return "Extension[name=" + name + ", token=" + (tokenSha256 == null ? "none" : "****")
                + ", sources=" + sources + ", allow=" + allow.size() + ", deny=" + deny.size() + "]";
    }
}
