package dev.sluice.proxy.limits;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.testing.ManualClock;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The budget accounts: fixed windows aligned to the epoch, and usage counted before a budget exists. */
class EgressBudgetsTest {

    private static final Duration HOUR = Duration.ofHours(1);

    @Test
    void tokensUsedBeforeAReloadAddsABudgetCountInTheirWindow() {
        ManualClock clock = new ManualClock(Instant.parse("2026-12-02T10:05:00Z"));
        EgressBudgets budgets = new EgressBudgets(clock);
        budgets.tokenAccount("agent", HOUR).add(600);
        clock.advance(Duration.ofSeconds(60));
        budgets.tokenAccount("agent", HOUR).add(500);
        clock.advance(Duration.ofSeconds(60));

        assertThat(budgets.tokensExhausted("agent", 1000, HOUR)).isTrue();
        assertThat(budgets.tokensExhausted("agent", 2000, HOUR)).isFalse();
        assertThat(budgets.tokensExhausted("other", 1, HOUR)).isFalse();

        clock.set(Instant.parse("2026-12-02T11:00:00Z"));
        assertThat(budgets.tokensExhausted("agent", 1000, HOUR)).isFalse();
    }

    @Test
    void bytesCountedBeforeABudgetExistsCountInTheirWindowToo() {
        ManualClock clock = new ManualClock(Instant.parse("2026-12-02T10:59:00Z"));
        EgressBudgets budgets = new EgressBudgets(clock);
        budgets.account("agent", HOUR).add(4096);
        clock.advance(Duration.ofSeconds(30));

        assertThat(budgets.exhausted("agent", 4096, HOUR)).isTrue();
        assertThat(budgets.exhausted("agent", 0, HOUR)).as("no budget").isFalse();
        clock.set(Instant.parse("2026-12-02T11:00:00Z"));
        assertThat(budgets.exhausted("agent", 4096, HOUR)).isFalse();
    }
}
