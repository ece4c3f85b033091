package dev.sluice.rules.credential;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.Rule;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code sluice check} warns about: an extension that holds credentials and may open a blind tunnel
 * (a CONNECT to a host that is not under {@code inspect}, or to an address range). Sluice cannot see a
 * placeholder inside a blind tunnel, so such an extension could send its placeholders — useless there,
 * but also the data it got back from a credential-bearing host — to a host that stores what it receives.
 */
public final class BlindTunnels {

    private BlindTunnels() {
    }

    /** Returns one warning line per extension with credentials and allow rule that may tunnel blind. */
    public static List<String> warnings(Policy policy) {
        List<String> out = new ArrayList<>();
        for (Extension e : policy.extensions().values()) {
            if (e.credentials().isEmpty()) {
                continue;
            }
            for (Rule r : e.allow()) {
                String target = r.host() != null ? r.host() : String.valueOf(r.cidr());
                boolean inspected = r.host() != null && policy.inspected(
                        r.host().startsWith("*.") ? "x" + r.host().substring(1) : r.host()).isPresent()
                        && (!r.host().startsWith("*.") || policy.inspect().containsKey(r.host())
                        || policy.inspected(r.host().substring(2)).map(i -> i.host().startsWith("*.")).orElse(false));
                if (!inspected) {
                    out.add("warning: extension " + e.name() + " holds credentials " + e.credentials()
                            + " and may open blind tunnels to " + target + " (rule " + r.id() + "; not under inspect):"
                            + " Sluice cannot see a placeholder or any data sent there; inspect it or narrow the rule");
                }
            }
        }
        return out;
    }
}
