package dev.sluice.proxy.limits;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Per-extension egress byte budgets ({@code limits.egress_budget} per {@code limits.egress_budget_window}):
 * bytes toward the internet are added as they flow; once an extension has used its budget in the
 * current window, its new requests and tunnels are answered 429 {@code egress_budget} until the window
 * ends. Windows are fixed and aligned to the epoch (a 1h window resets on the hour, UTC). Exchanges
 * already running are not cut.
 *
 * <p>It also keeps the per-extension LLM token accounts of {@code limits.token_budget} (tokens the
 * providers' responses reported, input plus output), counted the same way in their own windows. All of it
 * is in memory: a restart starts every window from zero.
 */
public final class EgressBudgets {

    private final Clock clock;
    private final Map<String, Account> accounts = new ConcurrentHashMap<>();
    private final Map<String, Account> tokenAccounts = new ConcurrentHashMap<>();

    public EgressBudgets(Clock clock) {
        this.clock = clock;
    }

    /** Returns the account of {@code extension}, created on first use. */
    public Account account(String extension) {
        return accounts.computeIfAbsent(extension, e -> new Account(clock));
    }

    /**
     * Returns the account of {@code extension} counting in windows of {@code window} (the policy's
     * {@code limits.egress_budget_window}, set whether or not a budget is configured), so that bytes
     * counted before a reload adds a budget still count in the window they fell in.
     */
    public Account account(String extension, Duration window) {
        Account account = account(extension);
        account.window(window);
        return account;
    }

    /**
     * Answers whether {@code extension} has used {@code budgetBytes} or more in the current window of
     * {@code window}; always false when {@code budgetBytes} is 0 (no budget).
     */
    public boolean exhausted(String extension, long budgetBytes, Duration window) {
        return budgetBytes > 0 && account(extension).used(window) >= budgetBytes;
    }

    /** Returns the LLM token account of {@code extension} ({@code limits.token_budget}), created on first use. */
    public Account tokenAccount(String extension) {
        return tokenAccounts.computeIfAbsent(extension, e -> new Account(clock));
    }

    /**
     * Returns the LLM token account of {@code extension} counting in windows of {@code window} (the
     * policy's {@code limits.token_budget.window}, set whether or not a budget is configured), so that
     * tokens used before a reload adds a budget still count in the window they fell in.
     */
    public Account tokenAccount(String extension, Duration window) {
        Account account = tokenAccount(extension);
        account.window(window);
        return account;
    }

    /**
     * Answers whether {@code extension} has used {@code budgetTokens} LLM tokens or more in the current
     * window of {@code window}; always false when {@code budgetTokens} is 0 (no budget).
     */
    public boolean tokensExhausted(String extension, long budgetTokens, Duration window) {
        return budgetTokens > 0 && tokenAccount(extension).used(window) >= budgetTokens;
    }

    /** One extension's bytes (or tokens) in the current window. */
    public static final class Account {
        private final Clock clock;
        private final AtomicLong bytes = new AtomicLong();
        private volatile long windowStartMillis;
        /** The window's length; until a policy names one, the default window of both budgets (1h). */
        private volatile long windowMillis = Duration.ofHours(1).toMillis();

        Account(Clock clock) {
            this.clock = clock;
        }

        /** Adds {@code n} egress bytes (n &gt; 0) to the current window. */
        public void add(long n) {
            roll(windowMillis);
            bytes.addAndGet(n);
        }

        /** Returns the bytes used in the current window of {@code window}. */
        public long used(Duration window) {
            window(window);
            roll(windowMillis);
            return bytes.get();
        }

        /** Sets the window's length (from the policy; a reload may change it). */
        void window(Duration window) {
            windowMillis = Math.max(1, window.toMillis());
        }

        private void roll(long lengthMillis) {
            long now = clock.millis();
            long start = now - Math.floorMod(now, lengthMillis);
            if (start != windowStartMillis) {
                synchronized (this) {
                    if (start != windowStartMillis) {
                        windowStartMillis = start;
                        bytes.set(0);
                    }
                }
            }
        }
    }
}
