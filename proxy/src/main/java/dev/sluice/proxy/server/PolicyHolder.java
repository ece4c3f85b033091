package dev.sluice.proxy.server;

import dev.sluice.rules.policy.Policy;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Holds the running policy snapshot. Readers take {@link #current()} once per decision and keep that
 * snapshot for the whole exchange; a reload swaps the reference atomically, so a connection already
 * decided keeps its decision.
 */
public final class PolicyHolder {

    private final AtomicReference<Policy> current;

    public PolicyHolder(Policy initial) {
        this.current = new AtomicReference<>(Objects.requireNonNull(initial, "initial"));
    }

    /** Returns the running snapshot; never null. */
    public Policy current() {
        return current.get();
    }

    /** Replaces the running snapshot with {@code next} (already fully loaded and validated). */
    public void swap(Policy next) {
        current.set(Objects.requireNonNull(next, "next"));
    }
}
