package dev.sluice.rules.decision;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;
import java.net.InetAddress;
import java.util.List;

/**
 * Decisions as pure functions of values: no network, no clock, no state. Netty handlers ask; they
 * never decide by themselves.
 */
public final class Decider {

    private Decider() {
    }

    /**
     * Decides on the name (design.md step 4): deny entries (the extension's, then global) always win;
     * then the extension's allow rules and its groups (exact host, {@code *.suffix} for subdomains only,
     * CIDR for IP literals), then ports, then methods and paths when {@code request} is non-null.
     * In report mode a rule miss becomes {@link Verdict#WOULD_DENY}.
     *
     * @param request the visible request, or null for a tunnel
     */
    public static Decision decide(Policy policy, Extension extension, Target target, RequestInfo request) {
        throw new UnsupportedOperationException("todo");
    }

    /**
     * Checks resolved answers (design.md step 5): every answer is classified; any non-public answer
     * not covered by {@code network.allow_private} denies with {@link Reason#ADDRESS_CLASS}
     * (metadata is never covered); any answer that is one of Sluice's own listeners denies with
     * {@link Reason#SELF_LOOP}. Enforced in every mode. When {@code nameDecision} does not permit, it is
     * returned unchanged.
     *
     * @param answers the resolver's answers (for an IP literal: just that address); empty means {@code dns_failure}
     */
    public static AddressDecision checkAddresses(Policy policy, Decision nameDecision, Target target,
                                                 List<InetAddress> answers, SelfEndpoints self) {
        throw new UnsupportedOperationException("todo");
    }
}
