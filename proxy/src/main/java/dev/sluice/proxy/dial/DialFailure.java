package dev.sluice.proxy.dial;

import dev.sluice.rules.decision.AddressDecision;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;

/**
 * Why a dial did not produce a connected upstream channel: an address-class or self-loop denial
 * (then {@link #decision()} says which rule), a DNS failure, a refused or timed-out connect.
 * Carries no stack trace; the message is short and safe for logs.
 */
public final class DialFailure extends Exception {
    private static final long serialVersionUID = 1L;

    private final transient Decision decision;
    private final transient AddressDecision addressDecision;

    DialFailure(Decision decision, AddressDecision addressDecision, String detail) {
        super(detail, null, false, false);
        this.decision = decision;
        this.addressDecision = addressDecision;
    }

    /** Returns the deciding decision: a deny with the reason (address_class, self_loop, dns_failure, ...). */
    public Decision decision() {
        return decision;
    }

    /** Returns the reason of the failure. */
    public Reason reason() {
        return decision.reason();
    }

    /** Returns the address check, or null when resolution itself failed. */
    public AddressDecision addressDecision() {
        return addressDecision;
    }
}
