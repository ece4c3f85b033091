package dev.sluice.proxy.cli;

import dev.sluice.rules.decision.BuiltinRules;
import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.audit.AuditFields;
import dev.sluice.proxy.audit.Outcome;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Option;

/**
 * The record filters of {@code sluice audit summary|tail}: {@code --since}, {@code --extension},
 * {@code --decision}, {@code --credential}. A record passes when it passes every filter given.
 */
final class AuditFilter {

    private static final Pattern AGO = Pattern.compile("([0-9]{1,9})(s|m|h|d)");
    private static final Set<String> DECISIONS = Set.of("allow", "deny", "would_deny");
    private static final Set<String> OUTCOMES = Set.of(Outcome.UPSTREAM_FAILURE.label());

    @Option(names = "--since", paramLabel = "WHEN",
            description = "Only records from this time on: an RFC 3339 instant (2026-11-30T09:00:00Z) or a "
                    + "duration back from now (90s, 15m, 2h, 1d).")
    String since;

    @Option(names = "--extension", paramLabel = "NAME", description = "Only records of this extension.")
    String extension;

    @Option(names = "--decision", paramLabel = "DECISION", description = "Only records with this decision: "
            + "allow, deny or would_deny.")
    String decision;

    @Option(names = "--outcome", paramLabel = "OUTCOME", description = "Only records with this outcome: "
            + "upstream_failure (the policy let the request through and the network or origin failed it).")
    String outcome;

    @Option(names = "--credential", paramLabel = "NAME", description = "Only records of requests this credential "
            + "was injected into, or that were refused over its placeholder (rule credentials.NAME).")
    String credential;

    private Instant sinceInstant;

    /**
     * Validates the options against {@code clock}'s now.
     *
     * @throws IllegalArgumentException with an operator-facing message for a bad value
     */
    void prepare(Clock clock) {
        if (decision != null && !DECISIONS.contains(decision)) {
            throw new IllegalArgumentException("--decision: " + decision + " (expected: allow, deny or would_deny)");
        }
        if (outcome != null && !OUTCOMES.contains(outcome)) {
            throw new IllegalArgumentException("--outcome: " + outcome + " (expected: upstream_failure)");
        }
        sinceInstant = since == null ? null : parseSince(since, clock);
    }

    static Instant parseSince(String text, Clock clock) {
        Matcher m = AGO.matcher(text);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            Duration back = switch (m.group(2)) {
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
            return clock.instant().minus(back);
        }
        try {
            return OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("--since: " + text
                    + " (expected: an RFC 3339 instant such as 2026-11-30T09:00:00Z, or a duration such as 15m, 2h, 1d)");
        }
    }

    /** Answers whether {@code record} passes; a record without a readable {@code time} fails {@code --since}. */
    boolean matches(JsonNode record) {
        if (extension != null && !extension.equals(record.path(AuditFields.EXTENSION).asText(null))) {
            return false;
        }
        if (decision != null && !decision.equals(record.path(AuditFields.DECISION).asText(null))) {
            return false;
        }
        if (outcome != null && !outcome.equals(record.path(AuditFields.OUTCOME).asText(null))) {
            return false;
        }
        if (credential != null && !usesCredential(record, credential)) {
            return false;
        }
        if (sinceInstant != null) {
            String time = record.path(AuditFields.TIME).asText(null);
            if (time == null) {
                return false;
            }
            try {
                return !OffsetDateTime.parse(time).toInstant().isBefore(sinceInstant);
            } catch (DateTimeParseException e) {
                return false;
            }
        }
        return true;
    }

    /** Answers whether {@code record} injected {@code name} or was refused over its placeholder. */
    static boolean usesCredential(JsonNode record, String name) {
        for (JsonNode n : record.path(AuditFields.CREDENTIALS)) {
            if (name.equals(n.asText())) {
                return true;
            }
        }
        return BuiltinRules.credential(name).equals(record.path(AuditFields.RULE).asText(null));
    }
}
