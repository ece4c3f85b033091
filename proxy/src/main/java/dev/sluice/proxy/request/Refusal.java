package dev.sluice.proxy.request;

import org.jspecify.annotations.Nullable;
import dev.sluice.rules.decision.Decision;
import java.util.Objects;

/**
 * A refusal the request phase (or the transparent listener's tunnel phase) answers itself: the decision (reason, rule id), a short detail for the
 * record's {@code error} (never a secret), and whether the connection must close after the answer.
 *
 * @param decision the denial
 * @param detail the record's error text, or null
 * @param close whether the connection closes after the answer (a request with a body closes anyway)
 */
public record Refusal(Decision decision, @Nullable String detail, boolean close) {

    /** Checks that {@code decision} is given. */
    public Refusal {
        Objects.requireNonNull(decision, "decision");
    }
}
