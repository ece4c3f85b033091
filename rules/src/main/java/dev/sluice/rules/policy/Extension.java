package dev.sluice.rules.policy;

import dev.sluice.rules.address.Cidr;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One extension (a sandboxed client identity) with its rules, groups already expanded.
 *
 * @param name the extension's name, used as-is in logs and metrics
 * @param tokenSha256 the 32-byte SHA-256 of its proxy token, or null when it has no explicit-mode auth
 * @param sources source prefixes that identify it in transparent mode
 * @param allow allow rules, own first, then each group's in the order listed
 * @param deny the extension's own deny rules
 * @param credentials the names of the policy's {@code credentials} it may use, in the order listed
 *
 * <p>{@code allow} and {@code deny} are kept as immutable lists that also carry a lookup index (exact
 * names, suffixes, prefixes), so that deciding costs about the same for any number of rules.
 */
public record Extension(String name, byte @Nullable [] tokenSha256, List<Cidr> sources, List<Rule> allow, List<Rule> deny,
                        List<String> credentials) {

    public Extension {
        tokenSha256 = tokenSha256 == null ? null : tokenSha256.clone();
        sources = List.copyOf(sources);
        allow = RuleList.copyOf(allow);
        deny = RuleList.copyOf(deny);
        credentials = credentials == null ? List.of() : List.copyOf(credentials);
    }

    /** An extension that may use no credential. */
    public Extension(String name, byte[] tokenSha256, List<Cidr> sources, List<Rule> allow, List<Rule> deny) {
        this(name, tokenSha256, sources, allow, deny, List.of());
    }

    /** The name of the extension that unidentified clients get, when the policy defines it. */
    public static final String DEFAULT = "default";

    /**
     * How every output spells a client that no extension was found for (metrics label, {@code sluice
     * audit summary} and {@code tail}); audit records leave the {@code extension} field out instead. It
     * can never be an extension's name ({@link #NAME_PATTERN}).
     */
    public static final String UNIDENTIFIED = "(unidentified)";

    /** What an extension's (and a group's) name must match: a letter or digit, then up to 63 of {@code [A-Za-z0-9._-]}. */
    public static final String NAME_PATTERN = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";

    private static final java.util.regex.Pattern NAME = java.util.regex.Pattern.compile(NAME_PATTERN);

    /** Returns whether {@code name} is a valid extension name ({@link #NAME_PATTERN}); null is not. */
    public static boolean isValidName(@Nullable String name) {
        return name != null && NAME.matcher(name).matches();
    }

    @Override
    public byte[] tokenSha256() {
        return tokenSha256 == null ? null : tokenSha256.clone();
    }

    @Override
    public String toString() {
        return "Extension[name=" + name + ", token=" + (tokenSha256 == null ? "none" : "****")
                + ", sources=" + sources + ", allow=" + allow.size() + ", deny=" + deny.size() + ", credentials=" + credentials + "]";
    }
}
