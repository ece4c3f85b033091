package dev.sluice.rules.redflag;

import java.util.List;
import java.util.Objects;
import java.util.Set;

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

    /**
     * Answers whether {@code found} (the detector's matches in one piece of text) flags this rule: any
     * match does, except for {@code internal_reference} in a response, which flags only a reference the
     * request did not contain.
     *
     * @param requestReferences what the request's scan collected (lowercase); empty for a request
     */
    boolean flaggedBy(List<String> found, Set<String> requestReferences) {
        if (found.isEmpty()) {
            return false;
        }
        if (!id().equals("internal_reference") || requestReferences.isEmpty()) {
            return true;
        }
        for (String ref : found) {
            if (!requestReferences.contains(ref)) {
                return true;
            }
        }
        return false;
    }
}
