package dev.sluice.rules.redflag;

import java.util.Objects;

/**
 * One entry of {@code red_flags.rules}.
 *
 * @param detector what finds it (its {@link RedFlagDetector#id()} is the rule id)
 * @param action what a match does
 * @param direction which bodies it reads
 */
public record RedFlagRule(RedFlagDetector detector, RedFlagAction action, RedFlagDirection direction) {

    public RedFlagRule {
        Objects.requireNonNull(detector, "detector");
        Objects.requireNonNull(action, "action");
        Objects.requireNonNull(direction, "direction");
    }

    /** The rule id. */
    public String id() {
        return detector.id();
    }
}
