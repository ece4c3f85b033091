package dev.sluice.rules.decision;

import org.jspecify.annotations.Nullable;
import dev.sluice.rules.address.AddressClass;
import java.net.InetAddress;
import java.util.List;

/**
 * The result of checking the resolved answers of a target (design.md step 5).
 *
 * @param decision the final decision (the name decision when every answer passed)
 * @param dialAddress the checked address to dial, or null when the decision denies
 * @param answers every answer with its class, in resolver order
 */
public record AddressDecision(Decision decision, @Nullable InetAddress dialAddress, List<ClassifiedAddress> answers) {

    public AddressDecision {
        answers = List.copyOf(answers);
    }

    /**
     * One resolved address and its class.
     *
     * @param address the answer
     * @param addressClass its class
     * @param optedIn true when {@code network.allow_private} covers a non-public address
     */
    public record ClassifiedAddress(InetAddress address, AddressClass addressClass, boolean optedIn) {
    }
}
