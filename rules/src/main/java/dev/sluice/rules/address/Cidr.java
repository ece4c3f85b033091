package dev.sluice.rules.address;

import java.net.InetAddress;

/**
 * An IP prefix (RFC 4632 / RFC 4291 notation {@code address/length}), normalised: host bits are
 * zero, and an IPv4-mapped IPv6 prefix (inside ::ffff:0:0/96) is stored as the IPv4 prefix it
 * denotes, so {@code ::ffff:10.0.0.0/104} equals {@code 10.0.0.0/8} and {@code ::ffff:0:0/96} equals
 * {@code 0.0.0.0/0}'s v4 range is rejected by the loader rather than silently widened.
 *
 * @param network the network address (host bits zero)
 * @param prefixLength 0..32 for IPv4, 0..128 for IPv6
 */
public record Cidr(InetAddress network, int prefixLength) {

    /**
     * Parses {@code a.b.c.d/n}, {@code x::y/n} or a bare address (a host prefix).
     *
     * @throws IllegalArgumentException with a short message for anything else, or when host bits are set
     */
    public static Cidr parse(String text) {
        throw new UnsupportedOperationException("todo");
    }

    /** Answers whether {@code address} lies inside this prefix (an IPv4-mapped IPv6 address is compared as its IPv4 address). */
    public boolean contains(InetAddress address) {
        throw new UnsupportedOperationException("todo");
    }
}
