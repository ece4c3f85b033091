package dev.sluice.proxy.core;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import java.net.InetAddress;
import java.util.Optional;

/**
 * Identity on the transparent and DNS listeners (design.md step 2): the extension whose
 * {@code sources} prefix contains the client's address, else the {@code default} extension when the
 * policy has one. The loader guarantees that prefixes of different extensions never overlap, so at
 * most one extension matches.
 */
public final class SourceIdentity {

    private SourceIdentity() {
    }

    /**
     * Returns the extension of a client at {@code source} under {@code policy}.
     *
     * @param source the client's IP address (an IPv4-mapped address matches IPv4 prefixes)
     * @return the extension, or empty when no {@code sources} prefix matches and there is no {@code default}
     */
    public static Optional<Extension> identify(Policy policy, InetAddress source) {
        for (Extension extension : policy.extensions().values()) {
            for (Cidr cidr : extension.sources()) {
                if (cidr.contains(source)) {
                    return Optional.of(extension);
                }
            }
        }
        return policy.defaultExtension();
    }
}
