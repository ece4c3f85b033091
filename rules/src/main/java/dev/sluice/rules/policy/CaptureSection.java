package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the policy's {@code capture} section into {@link CaptureSettings}, reporting each problem with
 * its line and column (the same message form as every other section: {@code path: value (expected: ...)}).
 * <pre>
 * capture:
 *   hosts: [api.anthropic.com]   # required; each covered by an inspect entry
 *   sample: 0.1                  # 0.0..1.0, default 1.0
 *   max_body_bytes: 256KiB       # per body, default 256KiB
 *   retention: 7d                # ms, s, m, h or d; default 7d
 *   max_total_bytes: 256MiB      # the captures directory's cap, default 256MiB
 * </pre>
 */
final class CaptureSection {

    /** The keys of the section, in the order docs/policy.md lists them. */
    static final Set<String> KEYS = Collections.unmodifiableSet(new LinkedHashSet<>(List.of(
            "hosts", "sample", "max_body_bytes", "retention", "max_total_bytes")));

    private static final Pattern DURATION = Pattern.compile("([0-9]{1,9})(ms|s|m|h|d)");
    private static final Pattern SIZE = Pattern.compile("([0-9]{1,12})(B|KiB|MiB|GiB)?");
    /** Largest {@code max_body_bytes}: 64 MiB (a capture is held in memory until it is written). */
    static final long MAX_BODY_BYTES = 64L << 20;

    private final BiConsumer<Loc, String> error;
    private boolean failed;

    private CaptureSection(BiConsumer<Loc, String> error) {
        this.error = error;
    }

    /**
     * Returns the section's settings, or null when it is absent, null, or has an error (reported to
     * {@code error}).
     *
     * @param node the value of the top-level {@code capture} key, or null
     * @param inspect the policy's {@code inspect} entries by canonical host pattern
     * @param error receives each problem's location and message
     */
    static CaptureSettings parse(Node node, Map<String, InspectedHost> inspect, BiConsumer<Loc, String> error) {
        if (node == null || node instanceof ScalarNode s && s.isNull()) {
            return null;
        }
        return new CaptureSection(error).read(node, inspect);
    }

    private void error(Loc loc, String message) {
        failed = true;
        error.accept(loc, message);
    }

    private CaptureSettings read(Node node, Map<String, InspectedHost> inspect) {
        if (!(node instanceof MapNode m)) {
            error(node.loc(), "capture: " + show(node) + " (expected: a mapping)");
            return null;
        }
        for (YamlTree.Entry e : m.entries().values()) {
            if (!KEYS.contains(e.key())) {
                error(e.keyLoc(), "capture." + e.key() + ": unknown key (expected one of: " + String.join(", ", KEYS) + ")");
            }
        }
        List<String> hosts = hosts(m, inspect);
        double sample = sample(value(m, "sample"));
        long maxBody = size(value(m, "max_body_bytes"), "capture.max_body_bytes", CaptureSettings.DEFAULT_MAX_BODY_BYTES,
                MAX_BODY_BYTES);
        long maxTotal = size(value(m, "max_total_bytes"), "capture.max_total_bytes",
                CaptureSettings.DEFAULT_MAX_TOTAL_BYTES, Long.MAX_VALUE);
        Duration retention = duration(value(m, "retention"), "capture.retention", CaptureSettings.DEFAULT_RETENTION);
        if (failed) {
            return null;
        }
        return new CaptureSettings(hosts, sample, maxBody, retention, maxTotal);
    }

    private List<String> hosts(MapNode m, Map<String, InspectedHost> inspect) {
        List<String> out = new ArrayList<>();
        Node node = value(m, "hosts");
        if (node == null || !(node instanceof ListNode list) || list.items().isEmpty()) {
            error(node == null ? m.loc() : node.loc(), "capture.hosts: " + (node == null ? "missing" : show(node))
                    + " (expected: a non-empty list of inspected host names)");
            return out;
        }
        for (int i = 0; i < list.items().size(); i++) {
            Node item = list.items().get(i);
            String path = "capture.hosts[" + i + "]";
            if (!(item instanceof ScalarNode s) || s.token() != JsonToken.VALUE_STRING) {
                error(item.loc(), path + ": " + show(item) + " (expected: a string)");
                continue;
            }
            String text = s.text();
            boolean wildcard = text.startsWith("*.");
            String name = wildcard ? text.substring(2) : text;
            if (name.indexOf('*') >= 0) {
                error(item.loc(), path + ": " + text + " (expected: an exact name, or *.suffix)");
                continue;
            }
            String host;
            try {
                Target t = TargetParser.canonicalHost(name, 1);
                host = wildcard ? "*." + t.host() : t.host();
            } catch (MalformedTargetException e) {
                error(item.loc(), path + ": " + e.getMessage());
                continue;
            }
            if (!inspected(host, inspect)) {
                error(item.loc(), path + ": " + text + " is not inspected (expected: a host under inspect; only"
                        + " intercepted exchanges can be captured)");
                continue;
            }
            out.add(host);
        }
        return out;
    }

    /** Answers whether every host {@code pattern} matches is intercepted (an exact or a parent wildcard entry). */
    static boolean inspected(String pattern, Map<String, InspectedHost> inspect) {
        if (inspect.containsKey(pattern)) {
            return true;
        }
        String name = pattern.startsWith("*.") ? pattern.substring(2) : pattern;
        for (int dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
            if (inspect.containsKey("*" + name.substring(dot))) {
                return true;
            }
        }
        return false;
    }

    private double sample(Node node) {
        if (node == null) {
            return CaptureSettings.DEFAULT_SAMPLE;
        }
        if (node instanceof ScalarNode s && (s.token() == JsonToken.VALUE_NUMBER_INT
                || s.token() == JsonToken.VALUE_NUMBER_FLOAT)) {
            try {
                double v = Double.parseDouble(s.text());
                if (v >= 0.0 && v <= 1.0) {
                    return v;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        error(node.loc(), "capture.sample: " + show(node) + " (expected: a number 0.0..1.0)");
        return 0;
    }

    private long size(Node node, String path, long dflt, long max) {
        if (node == null) {
            return dflt;
        }
        Matcher matcher = node instanceof ScalarNode s && !s.isNull() ? SIZE.matcher(s.text()) : null;
        if (matcher == null || !matcher.matches()) {
            error(node.loc(), path + ": " + show(node) + " (expected: bytes, or a size such as 64KiB, 32MiB, 1GiB)");
            return dflt;
        }
        long n = Long.parseLong(matcher.group(1));
        String unit = matcher.group(2) == null ? "B" : matcher.group(2);
        int shift = unit.equals("KiB") ? 10 : unit.equals("MiB") ? 20 : unit.equals("GiB") ? 30 : 0;
        if (n == 0 || n > (max >> shift)) {
            error(node.loc(), path + ": " + show(node) + " (expected: 1.." + max + " bytes)");
            return dflt;
        }
        return n << shift;
    }

    private Duration duration(Node node, String path, Duration dflt) {
        if (node == null) {
            return dflt;
        }
        Matcher matcher = node instanceof ScalarNode s && !s.isNull() ? DURATION.matcher(s.text()) : null;
        if (matcher == null || !matcher.matches()) {
            error(node.loc(), path + ": " + show(node) + " (expected: a duration such as 90m, 24h, 7d)");
            return dflt;
        }
        long n = Long.parseLong(matcher.group(1));
        Duration d = switch (matcher.group(2)) {
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofDays(n);
        };
        if (d.isZero()) {
            error(node.loc(), path + ": " + show(node) + " (expected: > 0)");
            return dflt;
        }
        return d;
    }
}
