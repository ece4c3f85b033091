package dev.sluice.proxy.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

/** A UTC clock a test moves by hand ({@link #set}, {@link #advance}); safe to read from other threads. */
public final class ManualClock extends Clock {
    private volatile Instant now;

    public ManualClock(Instant start) {
        this.now = start;
    }

    /** Sets the time. */
    public void set(Instant instant) {
        now = instant;
    }

    /** Moves the time on by {@code by}. */
    public void advance(Duration by) {
        now = now.plus(by);
    }

    @Override
    public ZoneOffset getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }

    @Override
    public Instant instant() {
        return now;
    }
}
