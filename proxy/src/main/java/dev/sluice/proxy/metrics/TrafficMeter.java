package dev.sluice.proxy.metrics;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.limits.EgressBudgets;
import io.micrometer.core.instrument.Counter;

/**
 * The two byte counters of one (extension, destination) pair, looked up once per exchange so that
 * counting a buffer is a single add.
 *
 * @param egress bytes toward the internet
 * @param ingress bytes back from the internet
 * @param budget the extension's egress budget account, or null
 */
public record TrafficMeter(Counter egress, Counter ingress, EgressBudgets.@Nullable Account budget) {

    /** Returns these counters with {@code account} also charged for egress bytes. */
    public TrafficMeter withBudget(EgressBudgets.Account account) {
        return new TrafficMeter(egress, ingress, account);
    }
}
