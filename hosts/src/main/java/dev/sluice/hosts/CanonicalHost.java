package dev.sluice.hosts;

import org.jspecify.annotations.Nullable;
import java.util.Objects;

/**
 * A host in the canonical form the rest of Sluice uses (design.md step 3), checked, never repaired:
 * <ul>
 *   <li>a DNS name: lowercase ASCII (IDNA A-labels), labels of 1 to 63 characters from
 *       {@code [a-z0-9_-]} not starting or ending with {@code -}, at most 253 characters, no trailing
 *       dot, no wildcard, a last label that is not all digits;</li>
 *   <li>an IPv4 literal as a dotted quad of decimal octets without leading zeros;</li>
 *   <li>an IPv6 literal without brackets or zone id, in the RFC 5952 text form (lowercase, longest
 *       zero run compressed), for example {@code ::1}; an IPv4-mapped address as {@code ::ffff:a.b.c.d}
 *       (RFC 5952 section 5), the form {@code rules}' TargetParser gives a target.</li>
 * </ul>
 *
 * @param text the host as given (already canonical)
 * @param kind which of the three forms
 * @param address the 4 or 16 address bytes for an IP literal, {@code null} for a DNS name
 */
public record CanonicalHost(String text, Kind kind, byte @Nullable [] address) {

    /** The three forms of a host. */
    public enum Kind {
        /** A DNS name. */
        DNS,
        /** An IPv4 literal. */
        IPV4,
        /** An IPv6 literal. */
        IPV6
    }

    private static final int MAX_NAME = 253;
    private static final int MAX_LABEL = 63;

    /**
     * Checks that {@code host} is canonical.
     *
     * @throws IllegalArgumentException naming what is wrong, e.g.
     *     {@code "host: 'API.example.com' (expected: canonical lowercase DNS name or IP literal)"}
     */
    public static CanonicalHost of(String host) {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw bad(host, "empty");
        }
        if (host.indexOf(':') >= 0) {
            return ipv6(host);
        }
        if (looksLikeIpv4(host)) {
            return new CanonicalHost(host, Kind.IPV4, ipv4(host));
        }
        checkName(host);
        return new CanonicalHost(host, Kind.DNS, null);
    }

    /** Returns whether this is an IPv4 or IPv6 literal. */
    public boolean isIp() {
        return kind != Kind.DNS;
    }

    /** Returns the address bytes (a copy) of an IP literal; a DNS name has none. */
    @Override
    public byte @Nullable [] address() {
        return address == null ? null : address.clone();
    }

    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof CanonicalHost && ((CanonicalHost) o).text.equals(text);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }

    private static boolean looksLikeIpv4(String host) {
        // A name whose last label is all digits is either an IPv4 literal or malformed.
        int dot = host.lastIndexOf('.');
        String last = host.substring(dot + 1);
        return !last.isEmpty() && last.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    private static byte[] ipv4(String host) {
        String[] parts = host.split("\\.", -1);
        if (parts.length != 4) {
            throw bad(host, "numeric last label but not a dotted-quad IPv4 literal");
        }
        byte[] out = new byte[4];
        for (int i = 0; i < 4; i++) {
            String p = parts[i];
            if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(c -> c >= '0' && c <= '9')
                    || (p.length() > 1 && p.charAt(0) == '0')) {
                throw bad(host, "IPv4 octet '" + p + "' is not canonical decimal");
            }
            int v = Integer.parseInt(p);
            if (v > 255) {
                throw bad(host, "IPv4 octet " + v + " > 255");
            }
            out[i] = (byte) v;
        }
        return out;
    }

    private static CanonicalHost ipv6(String host) {
        // Only hex digits, ':' and '.' (an embedded IPv4 tail).
        for (int i = 0; i < host.length(); i++) {
            char c = host.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.';
            if (!ok) {
                throw bad(host, "character '" + c + "' in an IPv6 literal (brackets, zone ids and "
                        + "uppercase are not canonical)");
            }
        }
        byte[] bytes = IpAddresses.parseIpv6(host);
        if (bytes == null) {
            throw bad(host, "not an IPv6 literal");
        }
        // The one text form (IpAddresses.formatIpv6, RFC 5952), the form TargetParser gives targets:
        // an IPv4-mapped address is written ::ffff:a.b.c.d, never ::ffff:7f00:1.
        String canonical = IpAddresses.formatIpv6(bytes);
        if (!canonical.equals(host)) {
            throw bad(host, "IPv6 literal not in RFC 5952 form '" + canonical + "'");
        }
        return new CanonicalHost(host, Kind.IPV6, bytes);
    }

    private static void checkName(String host) {
        if (host.length() > MAX_NAME) {
            throw bad(host, "longer than " + MAX_NAME + " characters");
        }
        if (host.endsWith(".")) {
            throw bad(host, "trailing dot");
        }
        for (String label : host.split("\\.", -1)) {
            if (label.isEmpty()) {
                throw bad(host, "empty label");
            }
            if (label.length() > MAX_LABEL) {
                throw bad(host, "label longer than " + MAX_LABEL + " characters");
            }
            if (label.startsWith("-") || label.endsWith("-")) {
                throw bad(host, "label starts or ends with '-'");
            }
            for (int i = 0; i < label.length(); i++) {
                char c = label.charAt(i);
                boolean ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
                if (!ok) {
                    String what = c == '*' ? "wildcard"
                            : Character.isWhitespace(c) ? "whitespace"
                            : (c >= 'A' && c <= 'Z') ? "uppercase"
                            : "character '" + c + "'";
                    throw bad(host, what);
                }
            }
        }
    }

    private static IllegalArgumentException bad(String host, String what) {
        return new IllegalArgumentException("host: '" + host + "' " + what
                + " (expected: canonical lowercase DNS name or IP literal)");
    }
}
