package dev.sluice.rules.decision;

import dev.sluice.hosts.IpAddresses;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;

/**
 * Sluice's own listening sockets, so that a request can never be sent back into Sluice (reason
 * {@code self_loop}). A listener bound to a wildcard address is reachable through every local
 * address, which is why the host's interface addresses are carried too.
 *
 * <p>Dialling {@code address:port} counts as self when the port equals a listener's port and
 * <ul>
 *   <li>the address is the listener's bound address, or</li>
 *   <li>the listener is bound to a wildcard address (0.0.0.0 or ::, or unresolved) and the address is
 *       a loopback address (127/8, ::1), one of {@code localAddresses}, or itself a wildcard, or</li>
 *   <li>the address is a wildcard (0.0.0.0, ::): connecting to it reaches the local host on Linux.</li>
 * </ul>
 * IPv4-mapped IPv6 addresses are compared as their IPv4 address, so {@code ::ffff:127.0.0.1} is
 * loopback here too. A listener bound to one loopback address (127.0.0.1) is not reachable through
 * another (127.0.0.2), so that is not self; such answers are refused as {@code loopback} anyway.
 *
 * @param listeners every bound listener (explicit, transparent, admin, dns)
 * @param localAddresses the host's own interface addresses (loopback included)
 */
public record SelfEndpoints(List<InetSocketAddress> listeners, Set<InetAddress> localAddresses) {

    public SelfEndpoints {
        listeners = List.copyOf(listeners);
        localAddresses = Set.copyOf(localAddresses);
    }

    /** Answers whether dialling {@code address:port} would reach one of Sluice's own listeners. */
    public boolean isSelf(InetAddress address, int port) {
        InetAddress target = normalise(address);
        boolean targetWildcard = target.isAnyLocalAddress();
        boolean targetLocal = target.isLoopbackAddress() || isLocal(target);
        for (InetSocketAddress listener : listeners) {
            if (listener.getPort() != port) {
                continue;
            }
            if (targetWildcard) {
                return true;
            }
            InetAddress bound = listener.getAddress();
            if (bound == null || bound.isAnyLocalAddress()) {
                if (targetLocal) {
                    return true;
                }
            } else if (normalise(bound).equals(target)) {
                return true;
            }
        }
        return false;
    }

    private boolean isLocal(InetAddress target) {
        for (InetAddress local : localAddresses) {
            if (normalise(local).equals(target)) {
                return true;
            }
        }
        return false;
    }

    private static InetAddress normalise(InetAddress address) {
        InetAddress v4 = IpAddresses.v4View(address);
        if (v4 != null) {
            return v4;
        }
        // drop any scope id so that fe80::1%eth0 and fe80::1 compare equal
        return IpAddresses.inet6(address.getAddress());
    }
}
