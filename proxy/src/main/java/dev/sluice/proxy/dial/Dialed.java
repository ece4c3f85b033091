package dev.sluice.proxy.dial;

import dev.sluice.rules.decision.AddressDecision;
import io.netty.channel.Channel;
import java.net.InetSocketAddress;

/**
 * A connected upstream channel and the check that allowed it.
 *
 * @param channel the connected upstream channel, on the downstream channel's event loop
 * @param addressDecision the classified answers and the decision
 * @param remote exactly the address dialled (a checked answer) and the target port
 */
public record Dialed(Channel channel, AddressDecision addressDecision, InetSocketAddress remote) {
}
