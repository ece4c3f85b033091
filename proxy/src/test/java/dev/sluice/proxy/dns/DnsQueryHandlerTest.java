package dev.sluice.proxy.dns;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Which names the DNS responder answers: a table of named scenarios over one policy. */
class DnsQueryHandlerTest {

    private static final String POLICY = """
            version: 1
            mode: %s
            extensions:
              ext:
                sources: ["10.0.0.2/32"]
                allow:
                  - host: plain.test
                  - host: "*.wild.test"
                    ports: [8443]
                  - host: get-only.test
                    methods: [GET]
                  - host: paths-only.test
                    paths: ["/v1/**"]
                    ports: [8080]
                  - cidr: 203.0.113.0/24
                deny:
                  - host: blocked.plain.test
            deny:
              - host: "*.evil.test"
            """;

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            exact name                     | enforce | plain.test             | allow      | allowlisted
            wildcard on its own port       | enforce | a.wild.test            | allow      | allowlisted
            wildcard apex                  | enforce | wild.test              | deny       | not_allowlisted
            methods-only rule (plain HTTP) | enforce | get-only.test          | allow      | allowlisted
            paths-only rule on its port    | enforce | paths-only.test        | allow      | allowlisted
            unknown name                   | enforce | unknown.test           | deny       | not_allowlisted
            global deny                    | enforce | x.evil.test            | deny       | denied_by_rule
            report mode passes misses      | report  | unknown.test           | would_deny | not_allowlisted
            """)
    void decideName(String scenario, String mode, String name, String verdict, String reason) throws Exception {
        Policy policy = PolicyLoader.parse(POLICY.formatted(mode), "p.yaml");
        Decision decision = DnsQueryHandler.decideName(policy, policy.extension("ext").orElseThrow(), name);
        assertThat(decision.verdict().label()).as(scenario).isEqualTo(verdict);
        assertThat(decision.reason().label()).as(scenario).isEqualTo(reason);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            own deny rule wins | blocked.plain.test | extensions.ext.deny[0]
            global deny rule   | y.evil.test        | deny[0]
            nothing matched    | nope.test          | implicit-deny
            """)
    void refusalsNameTheDecidingRule(String scenario, String name, String rule) throws Exception {
        Policy policy = PolicyLoader.parse(POLICY.formatted("enforce"), "p.yaml");
        Decision decision = DnsQueryHandler.decideName(policy, policy.extension("ext").orElseThrow(), name);
        assertThat(decision.verdict()).as(scenario).isEqualTo(Verdict.DENY);
        assertThat(decision.ruleId()).as(scenario).isEqualTo(rule);
        assertThat(decision.reason()).isIn(Reason.DENIED_BY_RULE, Reason.NOT_ALLOWLISTED);
    }
}
