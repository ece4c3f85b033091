package dev.sluice.rules.address;

import java.net.InetAddress;

/**
 * Classifies IP addresses into {@link AddressClass}es. Pure function, no I/O.
 *
 * <p>IPv6 forms that embed an IPv4 address (::ffff:0:0/96 mapped, ::/96 compatible, 64:ff9b::/96
 * NAT64, 2002::/16 6to4, 2001::/32 Teredo with its inverted client address) are classified by the
 * embedded address when that is not public (so ::ffff:169.254.169.254 is {@code METADATA}), and as
 * {@code EMBEDDED_IPV4} otherwise: every embedded form is denied.
 */
public final class AddressClassifier {

    private AddressClassifier() {
    }

    /** Returns the class of {@code address}; never null. */
    public static AddressClass classify(InetAddress address) {
        throw new UnsupportedOperationException("todo");
    }
}
