package dev.sluice.proxy.audit;

import java.io.IOException;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The audit writer's one retry loop, for writes and rotations alike: repeat a step until it reports
 * done, sleeping between failed attempts with exponential backoff (from {@code initialMillis}, doubling,
 * up to {@code maxMillis}). Once a close has been requested, it keeps trying only until a deadline
 * ({@code closeRetryLimit} after the first attempt that saw the request), then gives up.
 */
final class Backoff {

    /** One attempt: returns true when the work is done, false to be called again at once (partial progress). */
    interface Step {
        boolean attempt() throws IOException;
    }

    private final long initialMillis;
    private final long maxMillis;
    private final long closeRetryLimitNanos;

    Backoff(long initialMillis, long maxMillis, Duration closeRetryLimit) {
        if (initialMillis <= 0 || maxMillis < initialMillis) {
            throw new IllegalArgumentException("initialMillis: " + initialMillis + ", maxMillis: " + maxMillis
                    + " (expected: 0 < initialMillis <= maxMillis)");
        }
        this.initialMillis = initialMillis;
        this.maxMillis = maxMillis;
        this.closeRetryLimitNanos = closeRetryLimit.toNanos();
    }

    /**
     * Runs {@code step} until it is done.
     *
     * @param onFailure told of every failed attempt (an {@link IOException} or a {@link RuntimeException})
     * @param closing whether a close has been requested (checked after each failure)
     * @param closeDeadline the {@link System#nanoTime()} by which to give up once closing, or 0 to start
     *     the close retry limit at the first failure that sees the request
     * @return true when the step is done; false when closing and the deadline passed
     */
    boolean retry(Step step, Consumer<Exception> onFailure, BooleanSupplier closing, long closeDeadline) {
        long backoffMillis = initialMillis;
        while (true) {
            try {
                if (step.attempt()) {
                    return true;
                }
                continue;
            } catch (IOException | RuntimeException e) {
                onFailure.accept(e);
            }
            if (closing.getAsBoolean()) {
                if (closeDeadline == 0) {
                    closeDeadline = System.nanoTime() + closeRetryLimitNanos;
                }
                if (System.nanoTime() - closeDeadline >= 0) {
                    return false;
                }
            }
            sleepMillis(backoffMillis);
            backoffMillis = Math.min(maxMillis, backoffMillis * 2);
        }
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            // only close() ends the writer; keep retrying
        }
    }
}
