package dev.sluice.rules.address;

/**
 * The class of an IP address, as far as egress is concerned. Every class but {@link #PUBLIC} is
 * denied unless {@code network.allow_private} covers the address ({@link #METADATA} and
 * {@link #UNSPECIFIED} never can be). See {@link AddressClassifier} for the exact ranges and sources.
 * The {@link #label()} is the word used in 403 bodies, audit records and metrics.
 */
public enum AddressClass {
    /** Globally routable unicast. The only class allowed without an opt-in. */
    PUBLIC("public"),
    /** 127.0.0.0/8, ::1. */
    LOOPBACK("loopback"),
    /** 10/8, 172.16/12, 192.168/16 (RFC 1918); fc00::/7 (RFC 4193, except AWS metadata). */
    PRIVATE("private"),
    /** 169.254.0.0/16, fe80::/10 (except cloud metadata). */
    LINK_LOCAL("link_local"),
    /** 169.254.169.254, 169.254.170.2, fd00:ec2::254, 100.100.100.200: cloud instance metadata. */
    METADATA("metadata"),
    /** 100.64.0.0/10 shared address space (RFC 6598). */
    CGNAT("cgnat"),
    /** 224.0.0.0/4, ff00::/8. */
    MULTICAST("multicast"),
    /**
     * Everything else special-purpose (IANA registries): 0/8, 192.0.0/24, the test nets, 192.88.99/24,
     * 198.18/15, 240/4 with broadcast; 2001::/23 (but Teredo), 2001:db8::/32, 3fff::/20, 100::/64,
     * 5f00::/16, fec0::/10, and IPv6 outside 2000::/3.
     */
    RESERVED("reserved"),
    /** 0.0.0.0, ::. */
    UNSPECIFIED("unspecified"),
    /** An IPv6 form that embeds an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) whose embedded address is public. */
    EMBEDDED_IPV4("embedded_ipv4");

    private final String label;

    AddressClass(String label) {
        this.label = label;
    }

    /** Returns the snake_case word for this class, e.g. {@code link_local}. */
    public String label() {
        return label;
    }
}
