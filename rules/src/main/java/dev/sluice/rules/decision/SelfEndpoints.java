package dev.sluice.rules.decision;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;

/**
 * Sluice's own listening sockets, so that a request can never be sent back into Sluice (reason
 * {@code self_loop}). A listener bound to a wildcard address is reachable through every local
 * address, which is why the host's interface addresses are carried too.
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
        throw new UnsupportedOperationException("todo");
    }
}
