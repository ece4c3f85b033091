package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.scalarText;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code approvals} (docs/policy.md "approvals"): backend, timeout, scopes, overlay. */
final class ApprovalsSection {

    static final Set<String> APPROVAL_KEYS = orderedSet("backend", "timeout", "scopes", "overlay");

    private final PolicyCursor in;

    ApprovalsSection(PolicyCursor in) {
        this.in = in;
    }

    /** Reads {@code approvals} (after {@code include}: the overlay must be one of the fragments). */
    @Nullable ApprovalSettings approvals(@Nullable Node node) {
        if (node == null || isNull(node)) {
            return null;
        }
        MapNode m = in.map(node, "approvals");
        if (m == null) {
            return null;
        }
        in.checkKeys(m, "approvals.", APPROVAL_KEYS, Set.of());
        java.net.URI webhook = null;
        ApprovalSettings.Backend backend = null;
        Node b = value(m, "backend");
        if (b == null) {
            in.error(m.loc(), "approvals.backend: missing (expected: an http:// or https:// webhook URL, or admin)");
        } else {
            String text = in.string(b, "approvals.backend");
            if (text != null && text.equals("admin")) {
                // listen.admin always exists (default 127.0.0.1:9901): sluice approvals reaches it there.
                backend = ApprovalSettings.Backend.ADMIN;
            } else if (text != null) {
                try {
                    webhook = new java.net.URI(text);
                    if (webhook.getScheme() == null || !Set.of("http", "https").contains(webhook.getScheme())
                            || webhook.getHost() == null) {
                        throw new java.net.URISyntaxException(text, "not http(s)");
                    }
                    backend = ApprovalSettings.Backend.WEBHOOK;
                } catch (java.net.URISyntaxException e) {
                    in.error(b.loc(), "approvals.backend: " + text
                            + " (expected: an http:// or https:// webhook URL, or admin)");
                    webhook = null;
                }
            }
        }
        Duration timeout = in.duration(value(m, "timeout"), "approvals.timeout", ApprovalSettings.DEFAULT_TIMEOUT);
        Node t = value(m, "timeout");
        if (t != null && timeout != null && (timeout.isZero() || timeout.compareTo(ApprovalSettings.MAX_TIMEOUT) > 0)) {
            in.error(t.loc(), "approvals.timeout: " + scalarText(t) + " (expected: more than 0, at most 5m)");
        }
        Set<String> scopes = new LinkedHashSet<>();
        Node sc = value(m, "scopes");
        if (sc == null || isNull(sc)) {
            scopes.add("once");
        } else {
            ListNode list = in.list(sc, "approvals.scopes");
            if (list != null) {
                for (int i = 0; i < list.items().size(); i++) {
                    String scope = in.string(list.items().get(i), "approvals.scopes[" + i + "]");
                    if (scope != null && !ApprovalSettings.ALL_SCOPES.contains(scope)) {
                        in.error(list.items().get(i).loc(), "approvals.scopes[" + i + "]: " + scope
                                + " (expected: once, session or always)");
                    } else if (scope != null && !scopes.add(scope)) {
                        in.error(list.items().get(i).loc(), "approvals.scopes[" + i + "]: " + scope + " listed twice");
                    }
                }
            }
        }
        Path overlay = null;
        Node o = value(m, "overlay");
        if (o != null) {
            String text = in.string(o, "approvals.overlay");
            if (text != null) {
                Path base = in.file == null ? Path.of("").toAbsolutePath() : in.file.toAbsolutePath().getParent();
                overlay = base.resolve(text).normalize();
                if (!in.included.contains(overlay)) {
                    in.error(o.loc(), "approvals.overlay: " + text + " is not in include (expected: a fragment the "
                            + "policy includes, so that the rules approved with scope always load)");
                }
            }
        } else if (scopes.contains("always")) {
            in.error(m.loc(), "approvals.overlay: missing (expected: the fragment that scope always writes to, "
                    + "listed under include)");
        }
        return backend == null ? null : new ApprovalSettings(backend, webhook, timeout, scopes, overlay);
    }
}
