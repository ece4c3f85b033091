package dev.sluice.rules.decision;

import org.jspecify.annotations.Nullable;
import dev.sluice.rules.address.AddressClass;
import dev.sluice.rules.policy.InspectedHost;
import java.util.Objects;

/**
 * The result of deciding one request or tunnel: a verdict, the one reason, and the id of the rule that
 * decided (for example {@code extensions.github.allow[1]}, {@code groups.llm[0]}, {@code deny[2]},
 * or a fixed id such as {@code implicit-deny} and {@code network.address_class} for built-in checks).
 *
 * @param verdict allow, deny or would_deny
 * @param reason why; {@link Reason#ALLOWLISTED} for an allow
 * @param ruleId the deciding rule, never null ({@code implicit-deny} when nothing matched)
 * @param addressClass for {@link Reason#ADDRESS_CLASS}: the offending class; otherwise null
 * @param tunnelMode for a tunnel decided by {@link Decider#decideTunnel} (or
 *     {@link Decider#decideTunnelWithoutSni}): what it becomes when it is let through; null for a visible
 *     request and for decisions made by {@link Decider#decide}
 * @param inspected for a tunnel that becomes {@link TunnelMode#INTERCEPT}: the {@code inspect} settings
 *     of its host in the policy snapshot that decided it (the way Smokescreen's decision carries its
 *     interception config), so the phases that intercept need not look the host up again; null otherwise
 */
public record Decision(Verdict verdict, Reason reason, String ruleId, @Nullable AddressClass addressClass,
                       @Nullable TunnelMode tunnelMode, @Nullable InspectedHost inspected) {

    public Decision {
        Objects.requireNonNull(verdict, "verdict");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(ruleId, "ruleId");
    }

    /** A decision that says nothing about a tunnel ({@code tunnelMode} and {@code inspected} null). */
    public Decision(Verdict verdict, Reason reason, String ruleId, @Nullable AddressClass addressClass) {
        this(verdict, reason, ruleId, addressClass, null, null);
    }

    /** Returns an allow by {@code ruleId} (reason {@link Reason#ALLOWLISTED}). */
    public static Decision allow(String ruleId) {
        return new Decision(Verdict.ALLOW, Reason.ALLOWLISTED, ruleId, null);
    }

    /** Returns a denial (verdict deny in every mode) for {@code reason} by {@code ruleId}. */
    public static Decision deny(Reason reason, String ruleId) {
        return new Decision(Verdict.DENY, reason, ruleId, null);
    }

    /** Returns this decision carrying {@link TunnelMode#BLIND} as what the tunnel becomes. */
    public Decision blindTunnel() {
        return new Decision(verdict, reason, ruleId, addressClass, TunnelMode.BLIND, null);
    }

    /** Returns this decision carrying {@link TunnelMode#INTERCEPT}, under the host's {@code inspected} settings. */
    public Decision interceptedTunnel(InspectedHost inspected) {
        return new Decision(verdict, reason, ruleId, addressClass, TunnelMode.INTERCEPT,
                Objects.requireNonNull(inspected, "inspected"));
    }

    /** Answers whether traffic may pass (allow, or would_deny in report mode). */
    public boolean permits() {
        return verdict != Verdict.DENY;
    }

    /**
     * Returns the one-line reason text for a response body and logs: the reason label, plus the
     * class for address-class denials, e.g. {@code address_class: metadata}.
     */
    public String reasonText() {
        return addressClass == null ? reason.label() : reason.label() + ": " + addressClass.label();
    }
}
