package dev.sluice.proxy.limits;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import org.junit.jupiter.api.Test;

/** The budget accounts: fixed windows aligned to the epoch, and usage counted before a budget exists. */
class EgressBudgetsTest {

    /** A clock the test moves by hand. */
    private static final class HandClock extends Clock {
        private Instant now;

        HandClock(Instant now) {
            this.now = now;
        }

        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    private static final Duration HOUR = Duration.ofHours(1);

    @Test
    void tokensUsedBeforeAReloadAddsABudgetCountInTheirWindow() {
        HandClock clock = new HandClock(Instant.parse("2026-12-02T10:05:00Z"));
        EgressBudgets budgets = new EgressBudgets(clock);
        budgets.tokenAccount("agent", HOUR).add(600);
        clock.now = clock.now.plusSeconds(60);
        budgets.tokenAccount("agent", HOUR).add(500);
        clock.now = clock.now.plusSeconds(60);

        assertThat(budgets.tokensExhausted("agent", 1000, HOUR)).isTrue();
        assertThat(budgets.tokensExhausted("agent", 2000, HOUR)).isFalse();
        assertThat(budgets.tokensExhausted("other", 1, HOUR)).isFalse();

        clock.now = Instant.parse("2026-12-02T11:00:00Z");
        assertThat(budgets.tokensExhausted("agent", 1000, HOUR)).isFalse();
    }

    @Test
    void bytesCountedBeforeABudgetExistsCountInTheirWindowToo() {
        HandClock clock = new HandClock(Instant.parse("2026-12-02T10:59:00Z"));
        EgressBudgets budgets = new EgressBudgets(clock);
        budgets.account("agent", HOUR).add(4096);
        clock.now = clock.now.plusSeconds(30);

        assertThat(budgets.exhausted("agent", 4096, HOUR)).isTrue();
        assertThat(budgets.exhausted("agent", 0, HOUR)).as("no budget").isFalse();
        clock.now = Instant.parse("2026-12-02T11:00:00Z");
        assertThat(budgets.exhausted("agent", 4096, HOUR)).isFalse();
    }
}
