package dev.sluice.rules.target;

import org.jspecify.annotations.Nullable;
import java.net.InetAddress;
import java.util.Objects;

/**
 * A canonical destination: host and port, as every decision sees it.
 *
 * <p>{@code host} is in canonical form (see {@link TargetParser}): lowercase ASCII (IDNA A-labels),
 * no trailing dot, and for an IP literal the one textual form of its address (IPv4 dotted quad,
 * IPv6 in RFC 5952 compressed form <em>without</em> brackets, an IPv4-mapped address as
 * {@code ::ffff:a.b.c.d}). {@code address} is the parsed address (an {@link java.net.Inet6Address}
 * for every IPv6 literal, mapped ones included)
 * when {@code host} is an IP literal, {@code null} for a DNS name.
 *
 * @param host canonical host, never empty
 * @param port TCP port, 1..65535
 * @param address the literal's address, or {@code null} for a DNS name
 */
public record Target(String host, int port, @Nullable InetAddress address) {

    public Target {
        Objects.requireNonNull(host, "host");
        if (host.isEmpty()) {
            throw new IllegalArgumentException("host: empty (expected: a canonical host)");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port: " + port + " (expected: 1..65535)");
        }
    }

    /** Answers whether the host is an IP literal (then {@link #address()} is non-null). */
    public boolean isIpLiteral() {
        return address != null;
    }

    /** Answers whether the host is an IPv6 literal. */
    public boolean isIpv6Literal() {
        return address instanceof java.net.Inet6Address;
    }

    /**
     * Returns the authority-form ({@code host:port}, RFC 9112 section 3.2.3) with brackets only around
     * an IPv6 literal, e.g. {@code example.com:443} or {@code [2001:db8::1]:443}.
     */
    public String authority() {
        return hostForUri() + ":" + port;
    }

    /** Returns the host as it appears in a URI or Host header: brackets around IPv6 only. */
    public String hostForUri() {
        return isIpv6Literal() ? "[" + host + "]" : host;
    }

    @Override
    public String toString() {
        return authority();
    }
}
