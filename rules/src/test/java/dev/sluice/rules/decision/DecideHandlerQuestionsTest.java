package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.WebSocketMode;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The questions handlers ask instead of deciding by themselves: may a refusal wait for approval
 * ({@link Decider#approvable}), may a WebSocket handshake go on ({@link Decider#decideWebSocket}), is a
 * transparent sandbox's DNS query answered ({@link Decider#decideDnsQuery}).
 */
class DecideHandlerQuestionsTest {

    private static final Policy ENFORCE = DecideTunnelTest.ENFORCE;
    private static final Policy REPORT = DecideTunnelTest.REPORT;

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "host not on the allowlist,        blind-miss.test:443,  GET,  /,     true",
        "port not allowed,                 api.llm.test:8443,    GET,  /,     true",
        "method not allowed,               limited.plain.test:80, POST, /,    true",
        "path not allowed,                 limited.llm.test:443, POST, /v2/x, true",
        "metadata IP literal,              169.254.169.254:80,   GET,  /,     false",
        "loopback IP literal,              127.0.0.1:80,         GET,  /,     false",
        "documentation-range IP literal,   198.51.100.1:443,     GET,  /,     false",
    })
    void approvable(String scenario, String authority, String method, String path, boolean expected) throws Exception {
        Extension ext = ENFORCE.extension("ext").orElseThrow();
        Target target = TargetParser.parseAuthority(authority);
        Decision d = Decider.decide(ENFORCE, ext, target, new RequestInfo(method, path));
        assertThat(d.permits()).as(scenario).isFalse();
        assertThat(Decider.approvable(d, target)).as(scenario + " (" + d.reason().label() + ")").isEqualTo(expected);
    }

    @Test
    void anAllowIsNotApprovableNorIsADenyRule() throws Exception {
        Target target = TargetParser.parseAuthority("api.llm.test:443");
        assertThat(Decider.approvable(Decision.allow("extensions.ext.allow[0]"), target)).isFalse();
        assertThat(Decider.approvable(Decision.deny(Reason.DENIED_BY_RULE, "deny[0]"), target)).isFalse();
        assertThat(Decider.approvable(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.TARGET), target)).isFalse();
    }

    @Test
    void aWebSocketIsRefusedOnlyUnderWebsocketRefuse() {
        assertThat(Decider.decideWebSocket(WebSocketMode.REFUSE)).satisfies(d -> {
            assertThat(d.permits()).isFalse();
            assertThat(d.reason()).isEqualTo(Reason.WEBSOCKET_REFUSED);
            assertThat(d.ruleId()).isEqualTo(BuiltinRules.INSPECT_WEBSOCKET);
        });
        for (WebSocketMode mode : WebSocketMode.values()) {
            if (mode != WebSocketMode.REFUSE) {
                assertThat(Decider.decideWebSocket(mode).permits()).as(mode.label()).isTrue();
            }
        }
        assertThat(Decider.decideWebSocket(null).permits()).as("a host that is not inspected").isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "allowed name is answered,          enforce, api.llm.test,       allow,      allowlisted",
        "method-limited name is answered,   enforce, limited.plain.test, allow,      allowlisted",
        "unknown name is not,               enforce, nowhere.test,       deny,       dns_not_allowlisted",
        "report mode answers a miss,        report,  nowhere.test,       would_deny, dns_not_allowlisted",
        "an IP literal is never answered,   enforce, 192.0.2.7,          deny,       dns_not_allowlisted",
        "not even in report mode,           report,  192.0.2.7,          deny,       dns_not_allowlisted",
    })
    void dnsQuery(String scenario, String mode, String name, String verdict, String reason) throws Exception {
        Policy policy = mode.equals("report") ? REPORT : ENFORCE;
        Extension ext = policy.extension("ext").orElseThrow();
        Decision d = Decider.decideDnsQuery(policy, ext, TargetParser.canonicalHost(name, 443));
        assertThat(d.verdict().label()).as(scenario).isEqualTo(verdict);
        assertThat(d.reason().label()).as(scenario).isEqualTo(reason);
    }
}
