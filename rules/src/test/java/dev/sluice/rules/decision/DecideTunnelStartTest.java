package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** {@link Decider#decideTunnelStart} as a table of named scenarios: verdict, reason and rule id. */
class DecideTunnelStartTest {

    static final String POLICY = """
            version: 1
            mode: %s
            extensions:
              default:
                allow:
                  - host: cdn.example.org
                  - host: other.example.org
                    ports: [443]
                  - host: ssh.example.org
                    ports: [22, 8443]
                  - host: loose.example.org
                    ports: [443]
                    tls_only: false
                  - host: strict.example.org
                    ports: [8443]
                    tls_only: true
                  - cidr: 203.0.113.0/24
                    ports: [443]
                  - host: api.inspected.example.org
            inspect:
              api.inspected.example.org: {}
            """;

    static Policy policy(String mode) throws PolicyException {
        return PolicyLoader.parse(POLICY.formatted(mode), "test.yaml");
    }

    /** name, target, tls, sni, verdict, reason, rule (enforce mode). */
    static Stream<Arguments> scenarios() {
        return Stream.of(
                Arguments.of("SNI is the target", "cdn.example.org:443", true, "cdn.example.org",
                        "allow", "allowlisted", "extensions.default.allow[0]"),
                Arguments.of("SNI in another case and with a trailing dot", "cdn.example.org:443", true,
                        "CDN.Example.Org.", "allow", "allowlisted", "extensions.default.allow[0]"),
                Arguments.of("SNI another allowed host on the port", "cdn.example.org:443", true, "other.example.org",
                        "allow", "allowlisted", "extensions.default.allow[1]"),
                Arguments.of("SNI allowed only on another port", "ssh.example.org:22", true, "other.example.org",
                        "deny", "sni_mismatch", "extensions.default.allow[1]"),
                Arguments.of("SNI not allowed at all", "cdn.example.org:443", true, "evil.example.net",
                        "deny", "sni_mismatch", "implicit-deny"),
                Arguments.of("SNI of an inspected host", "cdn.example.org:443", true, "api.inspected.example.org",
                        "deny", "sni_mismatch", "tls.sni"),
                Arguments.of("SNI with no canonical form", "cdn.example.org:443", true, "a..b",
                        "deny", "sni_mismatch", "tls.sni"),
                Arguments.of("no SNI to a named target", "cdn.example.org:443", true, null,
                        "deny", "no_sni", "extensions.default.allow[0]"),
                Arguments.of("no SNI to an IP literal", "203.0.113.7:443", true, null,
                        "allow", "allowlisted", "extensions.default.allow[5]"),
                Arguments.of("not TLS on 443 (tls_only by default)", "cdn.example.org:443", false, null,
                        "deny", "not_http_or_tls", "extensions.default.allow[0]"),
                Arguments.of("not TLS on 22 (no tls_only by default)", "ssh.example.org:22", false, null,
                        "allow", "allowlisted", "extensions.default.allow[2]"),
                Arguments.of("not TLS on 443, tls_only: false", "loose.example.org:443", false, null,
                        "allow", "allowlisted", "extensions.default.allow[3]"),
                Arguments.of("not TLS on 8443, tls_only: true", "strict.example.org:8443", false, null,
                        "deny", "not_http_or_tls", "extensions.default.allow[4]"),
                Arguments.of("not TLS on 8443 by a rule without tls_only", "ssh.example.org:8443", false, null,
                        "allow", "allowlisted", "extensions.default.allow[2]"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("scenarios")
    void decides(String name, String target, boolean tls, String sni, String verdict, String reason, String rule)
            throws Exception {
        Policy policy = policy("enforce");
        Decision d = start(policy, target, tls, sni);
        assertThat(d.verdict().label()).as(name).isEqualTo(verdict);
        assertThat(d.reason().label()).as(name).isEqualTo(reason);
        assertThat(d.ruleId()).as(name).isEqualTo(rule);
        assertThat(d.tunnelMode()).isEqualTo(TunnelMode.BLIND);
    }

    @Test
    void inReportModeRuleMissesAreWouldDenyButSniRefusalsStayEnforced() throws Exception {
        Policy policy = policy("report");
        assertThat(start(policy, "cdn.example.org:443", true, "evil.example.net").verdict()).isEqualTo(Verdict.WOULD_DENY);
        assertThat(start(policy, "cdn.example.org:443", false, null).verdict()).isEqualTo(Verdict.WOULD_DENY);
        assertThat(start(policy, "cdn.example.org:443", true, "api.inspected.example.org").verdict())
                .isEqualTo(Verdict.DENY);
    }

    @Test
    void theTunnelDecisionItselfIsReturnedWhenTheFirstBytesChangeNothing() throws Exception {
        Policy policy = policy("enforce");
        Extension ext = policy.extension("default").orElseThrow();
        Target target = TargetParser.parseAuthority("cdn.example.org:443");
        Decision tunnel = Decider.decideTunnel(policy, ext, target);
        assertThat(Decider.decideTunnelStart(policy, ext, target, tunnel, true, "cdn.example.org")).isSameAs(tunnel);
    }

    @Test
    void tlsOnlyOnADenyRuleIsAPolicyError() {
        assertThatThrownBy(() -> PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow: []
                    deny:
                      - host: a.example.org
                        tls_only: true
                """, "test.yaml")).isInstanceOf(PolicyException.class).hasMessageContaining("tls_only");
    }

    private static Decision start(Policy policy, String target, boolean tls, String sni) throws Exception {
        Extension ext = policy.extension("default").orElseThrow();
        Target t = TargetParser.parseAuthority(target);
        Decision tunnel = Decider.decideTunnel(policy, ext, t);
        assertThat(tunnel.permits()).as("the tunnel itself is allowed").isTrue();
        return Decider.decideTunnelStart(policy, ext, t, tunnel, tls, sni);
    }
}
