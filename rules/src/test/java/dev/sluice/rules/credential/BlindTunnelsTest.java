package dev.sluice.rules.credential;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.PolicyLoader;
import org.junit.jupiter.api.Test;

/** {@code sluice check}'s warning: extensions with credentials that may tunnel blind. */
class BlindTunnelsTest {

    @Test
    void warnsForEveryRuleOfACredentialHolderOutsideInspect() throws Exception {
        var policy = PolicyLoader.parse("""
                version: 1
                inspect: { api.openai.com: {}, "*.inspected.test": {} }
                extensions:
                  agent:
                    credentials: [openai]
                    allow:
                      - host: api.openai.com
                      - host: a.inspected.test
                      - host: "*.inspected.test"
                      - host: uploads.example.org
                      - cidr: 198.51.100.0/24
                  plain:
                    allow: [{host: uploads.example.org}]
                credentials:
                  openai:
                    source: {env: K}
                    inject: {hosts: [api.openai.com], header: authorization}
                """, "p.yaml");
        assertThat(BlindTunnels.warnings(policy)).hasSize(2)
                .anyMatch(w -> w.contains("extension agent") && w.contains("uploads.example.org"))
                .anyMatch(w -> w.contains("198.51.100.0/24"));
    }
}
