package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.TargetParser;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What a tunnel becomes is part of its decision: named scenarios for {@link Decider#decideTunnel}. */
class DecideTunnelTest {

    static final String POLICY = """
            version: 1
            extensions:
              ext:
                allow:
                  - host: api.llm.test
                    ports: [443]
                  - host: limited.llm.test
                    methods: [POST]
                    paths: ["/v1/**"]
                  - host: limited.plain.test
                    methods: [GET]
                  - host: blind.test
                  - host: plain.llm.test
                  - cidr: 192.0.2.0/24
                    ports: [443]
            inspect:
              api.llm.test: {}
              limited.llm.test: {}
              "*.wild.test": {}
              plain.llm.test: {}
            """;

    static Policy load(String yaml) {
        try {
            return PolicyLoader.parse(yaml, "test.yaml");
        } catch (Exception e) {
            throw new AssertionError(e.getMessage(), e);
        }
    }

    static final Policy ENFORCE = load(POLICY);
    static final Policy REPORT = load(POLICY.replace("version: 1\n", "version: 1\nmode: report\n"));

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "inspected host is intercepted,            enforce, api.llm.test:443,       allow,      allowlisted,        INTERCEPT",
        "not inspected is blind,                   enforce, blind.test:443,         allow,      allowlisted,        BLIND",
        "IP literal is never intercepted,          enforce, 192.0.2.7:443,          allow,      allowlisted,        BLIND",
        "method-limited inspected host opens,      enforce, limited.llm.test:443,   allow,      allowlisted,        INTERCEPT",
        "method-limited blind host stays shut,     enforce, limited.plain.test:443, deny,       method_not_allowed, BLIND",
        "inspected but not allowed is denied,      enforce, x.wild.test:443,        deny,       not_allowlisted,    INTERCEPT",
        "inspected on a port not allowed,          enforce, api.llm.test:8443,      deny,       port_not_allowed,   INTERCEPT",
        "report mode miss to inspected host,       report,  x.wild.test:443,        would_deny, not_allowlisted,    INTERCEPT",
        "report mode method-limited blind host,    report,  limited.plain.test:443, would_deny, method_not_allowed, BLIND",
    })
    void decideTunnel(String scenario, String mode, String authority, String verdict, String reason, TunnelMode tunnel)
            throws Exception {
        Policy policy = mode.equals("report") ? REPORT : ENFORCE;
        Extension ext = policy.extension("ext").orElseThrow();
        Decision d = Decider.decideTunnel(policy, ext, TargetParser.parseAuthority(authority));
        assertThat(d.verdict().label()).as(scenario).isEqualTo(verdict);
        assertThat(d.reason().label()).as(scenario).isEqualTo(reason);
        assertThat(d.tunnelMode()).as(scenario).isEqualTo(tunnel);
        // An intercepted tunnel carries the inspect settings it is intercepted under; a blind one none.
        if (tunnel == TunnelMode.INTERCEPT) {
            assertThat(d.inspected()).as(scenario)
                    .isEqualTo(policy.inspected(TargetParser.parseAuthority(authority).host()).orElseThrow());
        } else {
            assertThat(d.inspected()).as(scenario).isNull();
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "cidr rule allows a ClientHello without SNI, 192.0.2.7:443,   allow, allowlisted",
        "anything else is no_sni,                    198.51.100.1:443, deny,  no_sni",
        "cidr rule on another port is no_sni,        192.0.2.7:8443,  deny,  no_sni",
    })
    void decideTunnelWithoutSni(String scenario, String authority, String verdict, String reason) throws Exception {
        Extension ext = ENFORCE.extension("ext").orElseThrow();
        Decision d = Decider.decideTunnelWithoutSni(ENFORCE, ext, TargetParser.parseAuthority(authority));
        assertThat(d.verdict().label()).as(scenario).isEqualTo(verdict);
        assertThat(d.reason().label()).as(scenario).isEqualTo(reason);
        assertThat(d.tunnelMode()).as(scenario).isEqualTo(TunnelMode.BLIND);
    }
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "plain HTTP to an inspected host,                enforce, plain.llm.test:80,   deny,  tls_required,    inspect",
        "in report mode too,                             report,  plain.llm.test:80,   deny,  tls_required,    inspect",
        "a host not inspected is decided as before,      enforce, blind.test:80,       allow, allowlisted,     blind.test",
        "a rule miss keeps its own reason,               enforce, x.wild.test:80,      deny,  not_allowlisted, implicit-deny",
        "report-mode miss to an inspected host,          report,  x.wild.test:80,      deny,  tls_required,    inspect",
        "IP literal is never inspected,                  enforce, 192.0.2.7:443,       allow, allowlisted,     ext.allow[5]",
    })
    void decidePlainHttp(String scenario, String mode, String authority, String verdict, String reason, String rule)
            throws Exception {
        Policy policy = mode.equals("report") ? REPORT : ENFORCE;
        Extension ext = policy.extension("ext").orElseThrow();
        Decision d = Decider.decidePlainHttp(policy, ext, TargetParser.parseAuthority(authority),
                new RequestInfo("GET", "/"));
        assertThat(d.verdict().label()).as(scenario).isEqualTo(verdict);
        assertThat(d.reason().label()).as(scenario).isEqualTo(reason);
        if (!rule.startsWith("ext.") && !rule.equals("blind.test")) {
            assertThat(d.ruleId()).as(scenario).isEqualTo(rule);
        }
    }
}
