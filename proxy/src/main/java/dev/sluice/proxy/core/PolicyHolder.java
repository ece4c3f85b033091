package dev.sluice.proxy.core;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redflag.RedFlagFold;
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
        this.current = new AtomicReference<>(new Loaded(prepared(Objects.requireNonNull(initial, "initial")),
                clock.instant()));
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
        current.set(new Loaded(prepared(Objects.requireNonNull(next, "next")), clock.instant()));
    }

    /**
     * Builds, before the snapshot serves a request, what the first intercepted request would otherwise
     * build on its event loop: the keyword scan of the redaction detectors with the red-flag rules'
     * literals folded in ({@link RedFlagFold}, {@link DetectorSet#withTap}), which is cached on the set.
     */
    private static Policy prepared(Policy policy) {
        if (policy.redFlags() == null || policy.redaction() == null) {
            return policy;
        }
        RedFlagFold fold = RedFlagFold.of(policy.redFlags());
        if (fold != null) {
            policy.redaction().detectors().withTap(fold.keywords());
        }
        return policy;
    }
}
