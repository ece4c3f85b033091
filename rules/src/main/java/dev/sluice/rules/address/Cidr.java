package dev.sluice.rules.address;

import dev.sluice.hosts.IpAddresses;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Objects;

/**
 * An IP prefix in RFC 4632 / RFC 4291 section 2.3 notation ({@code address/length}), normalised: host
 * bits are zero, and an IPv4-mapped IPv6 prefix (inside ::ffff:0:0/96) is stored as the IPv4 prefix it
 * denotes, so {@code ::ffff:10.0.0.0/104} equals {@code 10.0.0.0/8}.
 *
 * <p>A mapped prefix shorter than /104 (that is, wider than an IPv4 /8; {@code ::ffff:0:0/96} would be
 * all of IPv4) is refused by {@link #parse}: a line that reads like a narrow IPv6 range must never
 * silently become a huge IPv4 one. Write the IPv4 prefix instead.
 *
 * <p>{@link #contains} compares IPv4 with IPv4 and IPv6 with IPv6, after reading an IPv4-mapped IPv6
 * address as its IPv4 address. So an IPv6 prefix never contains a mapped address (not even
 * {@code ::/0}); to cover {@code ::ffff:10.1.2.3}, write {@code 10.1.2.3/32}.
 *
 * @param network the network address (host bits zero); an {@link Inet4Address} for IPv4 and mapped prefixes
 * @param prefixLength 0..32 for IPv4, 0..128 for IPv6
 */
public record Cidr(InetAddress network, int prefixLength) {

    /**
     * Validates and normalises: a mapped IPv6 network with a prefix of at least 96 becomes its IPv4 prefix.
     *
     * @throws IllegalArgumentException when the length is out of range or host bits are set
     */
    public Cidr {
        Objects.requireNonNull(network, "network");
        byte[] a = network.getAddress();
        if (prefixLength < 0 || prefixLength > a.length * 8) {
            throw new IllegalArgumentException("prefix length: " + prefixLength + " (expected: 0.." + a.length * 8 + ")");
        }
        if (a.length == 16 && prefixLength >= 96 && IpAddresses.isMapped(a)) {
            network = IpAddresses.inet4(new byte[] {a[12], a[13], a[14], a[15]});
            prefixLength -= 96;
            a = network.getAddress();
        }
        if (!hostBitsZero(a, prefixLength)) {
            throw new IllegalArgumentException(IpAddresses.canonicalText(network) + "/" + prefixLength
                    + ": host bits set (expected: " + IpAddresses.canonicalText(masked(a, prefixLength)) + "/"
                    + prefixLength + ")");
        }
    }

    /**
     * Parses {@code a.b.c.d/n}, {@code x::y/n} or a bare address (a host prefix, /32 or /128). IPv4 must
     * be a strict dotted quad (no leading zeros, which some parsers read as octal); IPv6 as in RFC 4291
     * section 2.2, without brackets or zone id; the length is decimal.
     *
     * @throws IllegalArgumentException with a short message for anything else, when host bits are set,
     *                                  or for a mapped prefix shorter than /104
     */
    public static Cidr parse(String text) {
        Objects.requireNonNull(text, "text");
        int slash = text.indexOf('/');
        String addressText = slash < 0 ? text : text.substring(0, slash);
        InetAddress address;
        boolean v6 = addressText.indexOf(':') >= 0;
        if (v6) {
            byte[] b = IpAddresses.parseIpv6(addressText);
            address = b == null ? null : IpAddresses.inet6(b);
        } else {
            byte[] b = IpAddresses.parseDottedQuad(addressText);
            address = b == null ? null : IpAddresses.inet4(b);
        }
        if (address == null) {
            throw new IllegalArgumentException(quote(text) + " (expected: an IPv4 or IPv6 prefix such as 10.0.0.0/8 or fd00::/8)");
        }
        int max = v6 ? 128 : 32;
        int length = max;
        if (slash >= 0) {
            String lengthText = text.substring(slash + 1);
            if (lengthText.isEmpty() || lengthText.length() > 3 || !lengthText.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw new IllegalArgumentException(quote(text) + ": prefix length (expected: 0.." + max + ")");
            }
            length = Integer.parseInt(lengthText);
            if (length > max) {
                throw new IllegalArgumentException(quote(text) + ": prefix length " + length + " (expected: 0.." + max + ")");
            }
        }
        if (v6 && IpAddresses.isMapped(address.getAddress()) && length < 104) {
            throw new IllegalArgumentException(quote(text) + ": IPv4-mapped prefix shorter than /104 would cover "
                    + (length < 96 ? "IPv6 space and " : "") + "a large IPv4 range (expected: write the IPv4 prefix)");
        }
        return new Cidr(address, length);
    }

    /**
     * Answers whether {@code address} lies inside this prefix (an IPv4-mapped IPv6 address is compared as
     * its IPv4 address; IPv4 never lies inside an IPv6 prefix nor the reverse).
     */
    public boolean contains(InetAddress address) {
        Objects.requireNonNull(address, "address");
        byte[] n = network.getAddress();
        byte[] a = address.getAddress();
        if (a.length == 16 && IpAddresses.isMapped(a)) {
            a = new byte[] {a[12], a[13], a[14], a[15]};
        }
        if (a.length != n.length) {
            return false;
        }
        int full = prefixLength / 8;
        for (int i = 0; i < full; i++) {
            if (a[i] != n[i]) {
                return false;
            }
        }
        int rem = prefixLength % 8;
        if (rem == 0) {
            return true;
        }
        int mask = (0xff << (8 - rem)) & 0xff;
        return (a[full] & mask) == (n[full] & mask);
    }

    /** Answers whether this is an IPv4 prefix. */
    public boolean isIpv4() {
        return network instanceof Inet4Address;
    }

    /** Returns {@code address/length} in canonical text, e.g. {@code 10.0.0.0/8} or {@code fd00::/8}. */
    @Override
    public String toString() {
        return IpAddresses.canonicalText(network) + "/" + prefixLength;
    }

    private static boolean hostBitsZero(byte[] a, int prefixLength) {
        for (int bit = prefixLength; bit < a.length * 8; bit++) {
            if ((a[bit / 8] & (0x80 >>> (bit % 8))) != 0) {
                return false;
            }
        }
        return true;
    }

    private static InetAddress masked(byte[] a, int prefixLength) {
        byte[] m = a.clone();
        for (int bit = prefixLength; bit < m.length * 8; bit++) {
            m[bit / 8] &= (byte) ~(0x80 >>> (bit % 8));
        }
        return m.length == 4 ? IpAddresses.inet4(m) : IpAddresses.inet6(m);
    }

    private static String quote(String s) {
        return s.length() > 64 ? "\"" + s.substring(0, 64) + "...\"" : "\"" + s + "\"";
    }
}
