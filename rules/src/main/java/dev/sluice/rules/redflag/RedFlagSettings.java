package dev.sluice.rules.redflag;

import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The policy's {@code red_flags} section.
 *
 * @param rules the rules, in the order written
 * @param suppress exceptions: a rule that a suppression names does not run for exchanges to its host
 *                 and path prefix
 */
public record RedFlagSettings(List<RedFlagRule> rules, List<Suppression> suppress) {

    public RedFlagSettings {
        rules = List.copyOf(rules);
        suppress = List.copyOf(suppress);
    }

    /**
     * One {@code red_flags.suppress} entry.
     *
     * @param rule the rule id it silences
     * @param host canonical host it applies to, or null for every host
     * @param pathPrefix request path prefix (starting with {@code /}) it applies to, or null for every path
     */
    public record Suppression(String rule, @Nullable String host, @Nullable String pathPrefix) {
        /** Answers whether this suppression silences {@code ruleId} for {@code host} and {@code path}. */
        public boolean covers(String ruleId, @Nullable String host, @Nullable String path) {
            return rule.equals(ruleId) && (this.host == null || this.host.equals(host))
                    && (pathPrefix == null || (path != null && path.startsWith(pathPrefix)));
        }
    }

    /**
     * Returns the ids among {@code flagged} whose rule's action is {@code alert} or {@code block} (what
     * an alert is sent for), in rule order.
     */
    public List<String> alerting(java.util.Collection<String> flagged) {
        List<String> out = new ArrayList<>();
        for (RedFlagRule r : rules) {
            if (r.action() != RedFlagAction.LOG && flagged.contains(r.id())) {
                out.add(r.id());
            }
        }
        return out;
    }

    /**
     * Returns the strongest action ({@code block} over {@code alert} over {@code log}) among the rules
     * whose ids are in {@code flagged}, or null when none of them is a rule here.
     */
    public @Nullable RedFlagAction strongest(java.util.Collection<String> flagged) {
        RedFlagAction best = null;
        for (RedFlagRule r : rules) {
            if (flagged.contains(r.id()) && (best == null || r.action().ordinal() > best.ordinal())) {
                best = r.action();
            }
        }
        return best;
    }

    /**
     * Returns the rules that run for an exchange to {@code host} (canonical) at {@code path} (the
     * request-target's path, without the query) in the given direction: those of that direction that
     * no suppression covers.
     */
    public List<RedFlagRule> rulesFor(String host, String path, boolean response) {
        List<RedFlagRule> out = new ArrayList<>();
        for (RedFlagRule r : rules) {
            if (response ? !r.direction().response() : !r.direction().request()) {
                continue;
            }
            boolean suppressed = false;
            for (Suppression s : suppress) {
                if (s.covers(r.id(), host, path)) {
                    suppressed = true;
                    break;
                }
            }
            if (!suppressed) {
                out.add(r);
            }
        }
        return out;
    }
}
