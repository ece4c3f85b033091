package dev.sluice.proxy.core;

import dev.sluice.rules.policy.Policy;
import java.time.Clock;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Holds the running policy snapshot. Readers take {@link #current()} once per decision and keep that
 * snapshot for the whole exchange; a reload swaps the reference atomically, so a connection already
 * decided keeps its decision.
 */
public final class PolicyHolder {

    private record Loaded(Policy policy, Instant at) {
    }

    private final Clock clock;
    private final AtomicReference<Loaded> current;

    public PolicyHolder(Policy initial, Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
        this.current = new AtomicReference<>(new Loaded(Objects.requireNonNull(initial, "initial"), clock.instant()));
    }

    /** Returns the running snapshot; never null. */
    public Policy current() {
        return current.get().policy();
    }

    /** Returns when the running snapshot was put in place. */
    public Instant loadedAt() {
        return current.get().at();
    }

    /** Replaces the running snapshot with {@code next} (already fully loaded and validated). */
    public void swap(Policy next) {
        current.set(new Loaded(Objects.requireNonNull(next, "next"), clock.instant()));
    }
}
