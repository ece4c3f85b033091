package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code alerts} (docs/policy.md "alerts"): the webhook. */
final class AlertsSection {

    static final Set<String> ALERT_KEYS = orderedSet("webhook");

    private final PolicyCursor in;

    AlertsSection(PolicyCursor in) {
        this.in = in;
    }

    @Nullable AlertSettings alerts(@Nullable Node node) {
        if (node == null || isNull(node)) {
            return null;
        }
        MapNode m = in.map(node, "alerts");
        if (m == null) {
            return null;
        }
        in.checkKeys(m, "alerts.", ALERT_KEYS, Set.of());
        Node w = value(m, "webhook");
        if (w == null) {
            in.error(m.loc(), "alerts.webhook: missing (expected: an http:// or https:// URL)");
            return null;
        }
        String text = in.string(w, "alerts.webhook");
        if (text == null) {
            return null;
        }
        try {
            java.net.URI uri = new java.net.URI(text);
            if (uri.getScheme() == null || !Set.of("http", "https").contains(uri.getScheme())
                    || uri.getHost() == null || uri.getUserInfo() != null) {
                throw new java.net.URISyntaxException(text, "not an http(s) URL");
            }
            return new AlertSettings(uri);
        } catch (java.net.URISyntaxException e) {
            in.error(w.loc(), "alerts.webhook: " + text + " (expected: an http:// or https:// URL without user info)");
            return null;
        }
    }
}
