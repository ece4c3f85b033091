package dev.sluice.rules.target;

/**
 * Parses request-targets and hosts into canonical {@link Target}s.
 *
 * <p>Canonical form (design.md step 3): lowercase; one trailing dot dropped; IDNA to ASCII
 * (UTS #46 / RFC 5891 via {@link java.net.IDN}; a name that cannot be converted is malformed);
 * IP literals in every spelling parsed to one address, following inet_aton(3) for IPv4
 * (1 to 4 parts, each decimal, octal with a leading {@code 0}, or hex with {@code 0x}: so
 * {@code 2852039166}, {@code 169.254.43518}, {@code 0251.0376.0251.0376} and {@code 0xa9fea9fe} all
 * read as 169.254.169.254, and {@code 0177.0.0.1} as 127.0.0.1 as curl and libc read it); a host
 * whose last label is numeric but that is not a valid IPv4 address is malformed (never sent to
 * DNS); IPv6 only inside brackets, zone ids refused.
 */
public final class TargetParser {

    private TargetParser() {
    }

    /**
     * Parses an authority-form request-target of a CONNECT request ({@code host:port}, RFC 9112
     * section 3.2.3). The port is required.
     *
     * @throws MalformedTargetException for a missing or bad port, userinfo, a bad host
     */
    public static Target parseAuthority(String authority) throws MalformedTargetException {
        throw new UnsupportedOperationException("todo");
    }

    /**
     * Parses an absolute-form request-target ({@code http://host[:port]/path?query}, RFC 9112 section
     * 3.2.2). Only the {@code http} scheme is accepted (case-insensitive); userinfo is refused as
     * malformed (never silently dropped, so {@code http://allowed.com@evil.com/} can never be read as
     * either host); the default port is 80; an empty path becomes {@code /}.
     *
     * @throws MalformedTargetException for any other shape, including origin-form
     */
    public static HttpTarget parseAbsoluteForm(String requestTarget) throws MalformedTargetException {
        throw new UnsupportedOperationException("todo");
    }

    /**
     * Canonicalises a bare host (no port): a DNS name, an IPv4 literal in any inet_aton spelling, or
     * an IPv6 literal with or without brackets.
     *
     * @return the target with the given port
     * @throws MalformedTargetException when the host cannot be canonicalised
     */
    public static Target canonicalHost(String host, int port) throws MalformedTargetException {
        throw new UnsupportedOperationException("todo");
    }
}
