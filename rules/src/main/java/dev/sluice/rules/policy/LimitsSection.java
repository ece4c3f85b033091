package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.time.Duration;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code limits} (docs/policy.md "limits"), {@code token_budget} included. */
final class LimitsSection {

    static final Set<String> LIMITS_KEYS = orderedSet("header_timeout", "idle_timeout", "max_header_bytes",
            "max_inspected_body", "max_buffered_body", "max_connections_per_extension", "egress_budget",
            "egress_budget_window", "max_websocket_message", "token_budget");
    static final Set<String> TOKEN_BUDGET_KEYS = orderedSet("tokens", "window");
    static final Limits DEFAULT_LIMITS = new Limits(Duration.ofSeconds(15), Duration.ofSeconds(120), 32768,
            32L * 1024 * 1024, 512);

    private final PolicyCursor in;

    LimitsSection(PolicyCursor in) {
        this.in = in;
    }

    Limits limits(@Nullable Node node) {
        Limits d = DEFAULT_LIMITS;
        if (node == null || isNull(node)) {
            return d;
        }
        MapNode m = in.map(node, "limits");
        if (m == null) {
            return d;
        }
        in.checkKeys(m, "limits.", LIMITS_KEYS, Set.of());
        Duration header = in.duration(value(m, "header_timeout"), "limits.header_timeout", d.headerTimeout());
        Duration idle = in.duration(value(m, "idle_timeout"), "limits.idle_timeout", d.idleTimeout());
        long headerBytes = in.size(value(m, "max_header_bytes"), "limits.max_header_bytes", d.maxHeaderBytes(), Integer.MAX_VALUE);
        long body = in.size(value(m, "max_inspected_body"), "limits.max_inspected_body", d.maxInspectedBodyBytes(), Long.MAX_VALUE);
        long conns = in.integer(value(m, "max_connections_per_extension"), "limits.max_connections_per_extension",
                d.maxConnectionsPerExtension(), 1, Integer.MAX_VALUE);
        long budget = in.size(value(m, "egress_budget"), "limits.egress_budget", d.egressBudgetBytes(), Long.MAX_VALUE);
        Duration window = in.duration(value(m, "egress_budget_window"), "limits.egress_budget_window",
                d.egressBudgetWindow());
        long buffered = in.size(value(m, "max_buffered_body"), "limits.max_buffered_body", d.maxBufferedBodyBytes(),
                Integer.MAX_VALUE);
        long websocket = in.size(value(m, "max_websocket_message"), "limits.max_websocket_message",
                d.maxWebsocketMessageBytes(), Integer.MAX_VALUE);
        long tokens = d.tokenBudget();
        Duration tokenWindow = d.tokenBudgetWindow();
        Node tb = value(m, "token_budget");
        if (tb != null && !isNull(tb)) {
            MapNode t = in.map(tb, "limits.token_budget");
            if (t != null) {
                in.checkKeys(t, "limits.token_budget.", TOKEN_BUDGET_KEYS, Set.of());
                if (value(t, "tokens") == null) {
                    in.error(t.loc(), "limits.token_budget.tokens: missing (expected: an integer >= 1)");
                }
                tokens = in.integer(value(t, "tokens"), "limits.token_budget.tokens", 0, 1, Long.MAX_VALUE);
                tokenWindow = in.duration(value(t, "window"), "limits.token_budget.window", tokenWindow);
            }
        }
        return new Limits(header, idle, (int) headerBytes, body, (int) conns, budget, window, (int) buffered,
                (int) websocket, tokens, tokenWindow);
    }
}
