package dev.sluice.rules.address;

import dev.sluice.hosts.IpAddresses;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Objects;

/**
 * Classifies IP addresses into {@link AddressClass}es. Pure function, no I/O.
 *
 * <p>Sources: the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and updates), RFC 1918,
 * RFC 4193, RFC 6598, RFC 4291, and the cloud providers' metadata endpoints (AWS 169.254.169.254,
 * 169.254.170.2 for ECS task metadata, fd00:ec2::254; Alibaba 100.100.100.200).
 *
 * <p>IPv4: 0.0.0.0 unspecified; 0/8 reserved; 127/8 loopback; 10/8, 172.16/12, 192.168/16 private;
 * the metadata addresses; 169.254/16 link-local; 100.64/10 CGNAT; 224/4 multicast; 192.0.0/24,
 * 192.0.2/24, 192.88.99/24, 198.18/15, 198.51.100/24, 203.0.113/24 and 240/4 (with 255.255.255.255)
 * reserved; everything else public.
 *
 * <p>IPv6: :: unspecified; ::1 loopback; fc00::/7 private (fd00:ec2::254 metadata); fe80::/10
 * link-local; ff00::/8 multicast; 100::/64, 2001::/23 (minus Teredo, which is handled below; this
 * takes in 2001:10::/28 ORCHID and the other IETF protocol assignments), 2001:db8::/32, 3fff::/20,
 * 5f00::/16, fec0::/10 reserved; and everything outside the global unicast block 2000::/3 reserved
 * (unassigned space is never routed anywhere Sluice should send traffic).
 *
 * <p>IPv6 forms that embed an IPv4 address — ::ffff:0:0/96 mapped, ::/96 compatible (except :: and
 * ::1), 64:ff9b::/96 NAT64 (RFC 6052) and 64:ff9b:1::/48 local NAT64 (RFC 8215; the address is read
 * from the last 32 bits, the /96 layout), 2002::/16 6to4 (RFC 3056, bits 16..47), 2001::/32 Teredo
 * (RFC 4380, the client address is the last 32 bits XOR 0xffffffff) — are classified by the embedded
 * address when that is not public (so ::ffff:169.254.169.254 is {@code METADATA}), and as
 * {@code EMBEDDED_IPV4} otherwise: every embedded form is denied.
 *
 * <p>A 16-byte mapped address arriving as an {@link Inet4Address} (Java's
 * {@link InetAddress#getByAddress(byte[])} converts them) is simply classified as that IPv4 address.
 */
public final class AddressClassifier {

    private AddressClassifier() {
    }

    /** Returns the class of {@code address}; never null. */
    public static AddressClass classify(InetAddress address) {
        Objects.requireNonNull(address, "address");
        byte[] a = address.getAddress();
        if (a.length == 4) {
            return classifyV4(IpAddresses.toInt(a, 0));
        }
        return classifyV6(a);
    }

    /** Classifies an IPv4 address given as a 32-bit value. */
    static AddressClass classifyV4(int v) {
        if (v == 0) {
            return AddressClass.UNSPECIFIED;
        }
        int o1 = v >>> 24;
        int o2 = (v >>> 16) & 0xff;
        int o3 = (v >>> 8) & 0xff;
        if (v == 0xA9FEA9FE /* 169.254.169.254 */ || v == 0xA9FEAA02 /* 169.254.170.2 */
                || v == 0x646464C8 /* 100.100.100.200 */) {
            return AddressClass.METADATA;
        }
        switch (o1) {
            case 0:
                return AddressClass.RESERVED;
            case 10:
                return AddressClass.PRIVATE;
            case 127:
                return AddressClass.LOOPBACK;
            case 100:
                return (o2 & 0xC0) == 64 ? AddressClass.CGNAT : AddressClass.PUBLIC;
            case 169:
                return o2 == 254 ? AddressClass.LINK_LOCAL : AddressClass.PUBLIC;
            case 172:
                return (o2 & 0xF0) == 16 ? AddressClass.PRIVATE : AddressClass.PUBLIC;
            case 192:
                if (o2 == 168) {
                    return AddressClass.PRIVATE;
                }
                if ((o2 == 0 && (o3 == 0 || o3 == 2)) || (o2 == 88 && o3 == 99)) {
                    return AddressClass.RESERVED;
                }
                return AddressClass.PUBLIC;
            case 198:
                if (o2 == 18 || o2 == 19 || (o2 == 51 && o3 == 100)) {
                    return AddressClass.RESERVED;
                }
                return AddressClass.PUBLIC;
            case 203:
                return o2 == 0 && o3 == 113 ? AddressClass.RESERVED : AddressClass.PUBLIC;
            default:
                break;
        }
        if (o1 >= 224 && o1 <= 239) {
            return AddressClass.MULTICAST;
        }
        if (o1 >= 240) {
            return AddressClass.RESERVED;
        }
        return AddressClass.PUBLIC;
    }

    private static AddressClass classifyV6(byte[] a) {
        int w0 = ((a[0] & 0xff) << 8) | (a[1] & 0xff);
        int w1 = ((a[2] & 0xff) << 8) | (a[3] & 0xff);
        if (w0 == 0) {
            boolean first80Zero = w1 == 0 && allZero(a, 4, 10);
            if (first80Zero) {
                if (a[10] == (byte) 0xff && a[11] == (byte) 0xff) {
                    return embedded(IpAddresses.toInt(a, 12)); // ::ffff:0:0/96 mapped
                }
                if (a[10] == 0 && a[11] == 0) {
                    int v4 = IpAddresses.toInt(a, 12);
                    if (v4 == 0) {
                        return AddressClass.UNSPECIFIED; // ::
                    }
                    if (v4 == 1) {
                        return AddressClass.LOOPBACK; // ::1
                    }
                    return embedded(v4); // ::/96 compatible (RFC 4291 2.5.5.1, deprecated)
                }
            }
            return AddressClass.RESERVED;
        }
        if (w0 == 0x0064 && w1 == 0xff9b) {
            int w2 = ((a[4] & 0xff) << 8) | (a[5] & 0xff);
            if ((w2 == 0 && allZero(a, 6, 12)) || w2 == 1) {
                return embedded(IpAddresses.toInt(a, 12)); // 64:ff9b::/96, 64:ff9b:1::/48
            }
            return AddressClass.RESERVED;
        }
        if (w0 == 0x0100 && w1 == 0 && allZero(a, 4, 8)) {
            return AddressClass.RESERVED; // 100::/64 discard-only
        }
        if (w0 == 0x2001 && w1 == 0) {
            return embedded(~IpAddresses.toInt(a, 12)); // Teredo 2001::/32
        }
        if (w0 == 0x2001 && (w1 & 0xFE00) == 0) {
            return AddressClass.RESERVED; // 2001::/23 IETF protocol assignments (ORCHID, benchmarking, ...)
        }
        if (w0 == 0x2001 && w1 == 0x0db8) {
            return AddressClass.RESERVED; // documentation
        }
        if (w0 == 0x2002) {
            return embedded(IpAddresses.toInt(a, 2)); // 6to4
        }
        if ((w0 & 0xFFF0) == 0x3ff0) {
            return AddressClass.RESERVED; // 3fff::/20 documentation (RFC 9637)
        }
        if (w0 == 0x5f00) {
            return AddressClass.RESERVED; // 5f00::/16 SRv6 SIDs (RFC 9602)
        }
        if ((w0 & 0xFE00) == 0xFC00) {
            if (isAwsMetadataV6(a)) {
                return AddressClass.METADATA;
            }
            return AddressClass.PRIVATE; // fc00::/7 unique local
        }
        if ((w0 & 0xFFC0) == 0xFE80) {
            return AddressClass.LINK_LOCAL;
        }
        if ((w0 & 0xFFC0) == 0xFEC0) {
            return AddressClass.RESERVED; // deprecated site-local (RFC 3879)
        }
        if ((w0 & 0xFF00) == 0xFF00) {
            return AddressClass.MULTICAST;
        }
        if ((w0 & 0xE000) == 0x2000) {
            return AddressClass.PUBLIC;
        }
        return AddressClass.RESERVED;
    }

    /** fd00:ec2::254 */
    private static boolean isAwsMetadataV6(byte[] a) {
        return a[0] == (byte) 0xfd && a[1] == 0 && a[2] == 0x0e && a[3] == (byte) 0xc2 && allZero(a, 4, 14)
                && a[14] == 0x02 && a[15] == 0x54;
    }

    private static AddressClass embedded(int v4) {
        AddressClass c = classifyV4(v4);
        return c == AddressClass.PUBLIC ? AddressClass.EMBEDDED_IPV4 : c;
    }

    private static boolean allZero(byte[] a, int from, int to) {
        for (int i = from; i < to; i++) {
            if (a[i] != 0) {
                return false;
            }
        }
        return true;
    }
}
