package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.target.TargetParser;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PolicyLoaderTest {

    static final String TOKEN = "s3cret-token";
    static final String TOKEN_SHA = sha256(TOKEN);

    static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    static List<String> errors(String yaml) {
        PolicyException e = catchThrowableOfType(PolicyException.class, () -> PolicyLoader.parse(yaml, "p.yaml"));
        assertThat(e).as("expected the policy to be refused").isNotNull();
        return e.errors().stream().map(PolicyError::toString).toList();
    }

    @Test
    void fullPolicy() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                mode: report
                extensions:
                  github:
                    auth: { token_sha256: "%s" }
                    sources: ["10.200.1.2/32"]
                    allow:
                      - host: API.GitHub.com.
                      - host: "*.githubusercontent.com"
                        ports: [443]
                      - cidr: 203.0.113.0/24
                        ports: [443]
                      - host: registry.example.org
                        methods: [GET, HEAD]
                        paths: ["/@scope/**"]
                      - host: bücher.example
                    deny:
                      - host: gist.githubusercontent.com
                    groups: [llm]
                  default:
                    allow: []
                groups:
                  llm:
                    - { host: api.anthropic.com }
                deny:
                  - cidr: 198.51.100.0/24
                network:
                  allow_private: ["10.1.2.3/32", "::ffff:10.9.0.0/112"]
                  hosts:
                    API.Internal.test.: 127.0.0.1
                    v6.internal.test: "fd00::5"
                  resolvers: ["127.0.0.53:53", "10.0.0.2", "[::1]:5353"]
                listen:
                  proxy: 0.0.0.0:3129
                  admin: "[::1]:9902"
                  transparent: null
                  dns: ~
                limits:
                  header_timeout: 500ms
                  idle_timeout: 2m
                  max_header_bytes: 64KiB
                  max_inspected_body: 1048576
                  max_connections_per_extension: 7
                audit:
                  path: /var/log/sluice/audit.jsonl
                  max_file_bytes: 16MiB
                  keep_files: 3
                """.formatted(TOKEN_SHA), "full.yaml");

        assertThat(p.mode()).isEqualTo(Mode.REPORT);
        assertThat(p.source()).isEqualTo("full.yaml");
        Extension gh = p.extension("github").orElseThrow();
        assertThat(gh.allow()).extracting(Rule::id).containsExactly("extensions.github.allow[0]", "extensions.github.allow[1]",
                "extensions.github.allow[2]", "extensions.github.allow[3]", "extensions.github.allow[4]", "groups.llm[0]");
        assertThat(gh.allow()).extracting(Rule::host).containsExactly("api.github.com", "*.githubusercontent.com", null,
                "registry.example.org", "xn--bcher-kva.example", "api.anthropic.com");
        assertThat(gh.allow().get(0).ports()).isEmpty();
        assertThat(gh.allow().get(1).ports()).containsExactly(443);
        assertThat(gh.allow().get(2).cidr()).isEqualTo(Cidr.parse("203.0.113.0/24"));
        assertThat(gh.allow().get(3).methods()).containsExactlyInAnyOrder("GET", "HEAD");
        assertThat(gh.allow().get(3).paths()).containsExactly("/@scope/**");
        assertThat(gh.deny()).extracting(Rule::id).containsExactly("extensions.github.deny[0]");
        assertThat(gh.sources()).containsExactly(Cidr.parse("10.200.1.2/32"));
        assertThat(gh.tokenSha256()).isEqualTo(HexFormat.of().parseHex(TOKEN_SHA));
        assertThat(p.defaultExtension()).isPresent();
        assertThat(p.globalDeny()).extracting(Rule::id).containsExactly("deny[0]");
        assertThat(p.network().allowPrivate()).containsExactly(Cidr.parse("10.1.2.3/32"), Cidr.parse("10.9.0.0/16"));
        assertThat(p.network().hosts()).containsOnlyKeys("api.internal.test", "v6.internal.test");
        assertThat(p.network().hosts().get("api.internal.test")).isEqualTo(IpAddresses.parseStrict("127.0.0.1"));
        assertThat(p.network().resolvers()).containsExactly(
                new InetSocketAddress(IpAddresses.parseStrict("127.0.0.53"), 53),
                new InetSocketAddress(IpAddresses.parseStrict("10.0.0.2"), 53),
                new InetSocketAddress(IpAddresses.parseStrict("::1"), 5353));
        assertThat(p.listen().proxy()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("0.0.0.0"), 3129));
        assertThat(p.listen().admin()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("::1"), 9902));
        assertThat(p.listen().transparent()).isNull();
        assertThat(p.listen().dns()).isNull();
        assertThat(p.limits()).isEqualTo(new Limits(Duration.ofMillis(500), Duration.ofMinutes(2), 65536, 1048576, 7));
        assertThat(p.auditPath()).isEqualTo(Path.of("/var/log/sluice/audit.jsonl"));
        assertThat(p.audit()).isEqualTo(new AuditSettings(Path.of("/var/log/sluice/audit.jsonl"), 16L << 20, 3));
    }

    @Test
    void auditFormatAndStdout() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\naudit:\n  format: ocsf\n  stdout: true\n", "a.yaml");
        assertThat(p.audit().format()).isEqualTo(AuditSettings.Format.OCSF);
        assertThat(p.audit().stdout()).isTrue();
        assertThat(PolicyLoader.parse("version: 1\n", "a.yaml").audit().format()).isEqualTo(AuditSettings.Format.SLUICE);
        assertThatThrownBy(() -> PolicyLoader.parse("version: 1\naudit:\n  format: cef\n  stdout: 1\n", "a.yaml"))
                .isInstanceOf(PolicyException.class)
                .satisfies(e -> assertThat(((PolicyException) e).errors()).extracting(Object::toString).containsExactly(
                        "a.yaml:3:11: audit.format: cef (expected: sluice or ocsf)",
                        "a.yaml:4:11: audit.stdout: 1 (expected: true or false)"));
    }

    @Test
    void tokenBudget() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\nlimits:\n  token_budget: {tokens: 100000, window: 30m}\n", "a.yaml");
        assertThat(p.limits().tokenBudget()).isEqualTo(100_000);
        assertThat(p.limits().tokenBudgetWindow()).isEqualTo(Duration.ofMinutes(30));
        Policy dflt = PolicyLoader.parse("version: 1\nlimits:\n  token_budget:\n    tokens: 5\n", "a.yaml");
        assertThat(dflt.limits().tokenBudget()).isEqualTo(5);
        assertThat(dflt.limits().tokenBudgetWindow()).isEqualTo(Duration.ofHours(1));
        assertThat(PolicyLoader.parse("version: 1\n", "a.yaml").limits().tokenBudget()).isZero();
        assertThat(errors("version: 1\nlimits:\n  token_budget:\n    tokens: 0\n    window: 5\n    burst: 1\n"))
                .containsExactly("p.yaml:4:13: limits.token_budget.tokens: 0 (expected: 1..9223372036854775807)",
                        "p.yaml:5:13: limits.token_budget.window: 5 (expected: a duration such as 15s, 500ms, 2m, 1h)",
                        "p.yaml:6:5: limits.token_budget.burst: unknown key (expected one of: tokens, window)");
        assertThat(errors("version: 1\nlimits:\n  token_budget:\n    window: 1h\n"))
                .containsExactly("p.yaml:4:5: limits.token_budget.tokens: missing (expected: an integer >= 1)");
    }

    @Test
    void redFlags() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                network:
                  internal_domains: [Corp.Example]
                red_flags:
                  action: alert
                  rules:
                    - credential_path
                    - { id: template_injection, action: block, direction: request }
                    - { id: acme-project, pattern: "ACME-[0-9]{6}", keywords: ["acme-"] }
                    - internal_reference
                  suppress:
                    - { rule: credential_path, host: API.Example.COM, path_prefix: /v1/docs }
                """, "a.yaml");
        dev.sluice.rules.redflag.RedFlagSettings rf = p.redFlags();
        assertThat(rf.rules()).extracting(dev.sluice.rules.redflag.RedFlagRule::id)
                .containsExactly("credential_path", "template_injection", "acme-project", "internal_reference");
        assertThat(rf.rules().get(0).action()).isEqualTo(dev.sluice.rules.redflag.RedFlagAction.ALERT);
        assertThat(rf.rules().get(1).action()).isEqualTo(dev.sluice.rules.redflag.RedFlagAction.BLOCK);
        assertThat(rf.rules().get(3).detector().find("see wiki.corp.example")).isNotEmpty();
        assertThat(rf.rulesFor("api.example.com", "/v1/docs/x", false)).extracting(dev.sluice.rules.redflag.RedFlagRule::id)
                .containsExactly("template_injection", "acme-project", "internal_reference");
        assertThat(rf.rulesFor("api.example.com", "/v1/messages", true)).extracting(dev.sluice.rules.redflag.RedFlagRule::id)
                .containsExactly("credential_path", "acme-project", "internal_reference");
        assertThat(PolicyLoader.parse("version: 1\n", "a.yaml").redFlags()).isNull();
        assertThat(errors("""
                version: 1
                red_flags:
                  action: shout
                  rules:
                    - credential_paths
                    - { id: encoded_shell, pattern: "x", keywords: [xx] }
                    - { id: Bad_Id, pattern: "x", keywords: [xx] }
                    - { id: mine, pattern: "(", keywords: [] }
                  suppress:
                    - { rule: nope, path_prefix: v1 }
                """)).containsExactly(
                "p.yaml:3:11: red_flags.action: shout (expected: log, alert or block)",
                "p.yaml:5:7: red_flags.rules[0]: credential_paths (expected: one of credential_path, encoded_shell,"
                        + " template_injection, instruction_boundary, internal_reference, or {id, pattern, keywords})",
                "p.yaml:6:13: red_flags.rules[1].id: encoded_shell is a built-in rule (expected: no pattern or keywords, or a new id)",
                "p.yaml:7:13: red_flags.rules[2].id: Bad_Id (expected: [a-z0-9][a-z0-9-]{0,63})",
                "p.yaml:8:28: red_flags.rules[3].pattern: bad regular expression: Unclosed group near index 1"
                        + " (expected: java.util.regex syntax)",
                "p.yaml:8:43: red_flags.rules[3].keywords: empty (expected: a list of 1 or more strings found in every match)",
                "p.yaml:10:15: red_flags.suppress[0].rule: nope (expected: the id of one of red_flags.rules)",
                "p.yaml:10:34: red_flags.suppress[0].path_prefix: v1 (expected: a path starting with /)");
    }

    @Test
    void alertsWebhook() throws Exception {
        assertThat(PolicyLoader.parse("version: 1\nalerts:\n  webhook: https://hooks.example/sluice\n", "a.yaml")
                .alerts().webhook()).hasToString("https://hooks.example/sluice");
        assertThat(PolicyLoader.parse("version: 1\n", "a.yaml").alerts()).isNull();
        assertThat(errors("version: 1\nalerts:\n  webhook: ftp://x.example/\n")).containsExactly(
                "p.yaml:3:12: alerts.webhook: ftp://x.example/ (expected: an http:// or https:// URL without user info)");
        assertThat(errors("version: 1\nalerts: {}\n")).containsExactly(
                "p.yaml:2:9: alerts.webhook: missing (expected: an http:// or https:// URL)");
    }

    @Test
    void transparentAndDnsListeners() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\nlisten:\n  transparent: 10.200.0.1:15001\n  dns: 10.200.0.1\n",
                "t.yaml");
        assertThat(p.listen().transparent()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("10.200.0.1"), 15001));
        assertThat(p.listen().dns()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("10.200.0.1"), 53));
        Policy onlyTransparent = PolicyLoader.parse("version: 1\nlisten:\n  transparent: 0.0.0.0:15001\n  dns: null\n",
                "t.yaml");
        assertThat(onlyTransparent.listen().transparent().getPort()).isEqualTo(15001);
        assertThat(onlyTransparent.listen().dns()).isNull();
    }

    @Test
    void defaults() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\n", "min.yaml");
        assertThat(p.mode()).isEqualTo(Mode.ENFORCE);
        assertThat(p.extensions()).isEmpty();
        assertThat(p.globalDeny()).isEmpty();
        assertThat(p.listen().proxy()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("127.0.0.1"), 3128));
        assertThat(p.listen().admin()).isEqualTo(new InetSocketAddress(IpAddresses.parseStrict("127.0.0.1"), 9901));
        assertThat(p.limits()).isEqualTo(new Limits(Duration.ofSeconds(15), Duration.ofSeconds(120), 32768, 32L << 20, 512));
        assertThat(p.auditPath()).isEqualTo(Path.of("audit.jsonl"));
        assertThat(p.audit()).isEqualTo(new AuditSettings(Path.of("audit.jsonl"), 64L << 20, 10));
        assertThat(p.network().resolvers()).isEmpty();
        assertThat(p.network().allowPrivate()).isEmpty();
        assertThat(p.sha256Hex()).isEqualTo(sha256("version: 1\n"));
    }

    @Test
    void loadsFileAndHashesItsBytes(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("policy.yaml");
        String yaml = "# comment\nversion: 1\nextensions:\n  a:\n    allow:\n      - host: example.com\n";
        Files.writeString(file, yaml);
        Policy p = PolicyLoader.load(file);
        assertThat(p.sha256Hex()).isEqualTo(sha256(yaml)).hasSize(64);
        assertThat(p.source()).isEqualTo(file.toString());
        assertThat(p.extension("a").orElseThrow().allow()).singleElement().extracting(Rule::host).isEqualTo("example.com");
    }

    @Test
    void unreadableFile(@TempDir Path dir) {
        Path missing = dir.resolve("missing.yaml");
        PolicyException e = catchThrowableOfType(PolicyException.class, () -> PolicyLoader.load(missing));
        assertThat(e.errors()).singleElement().satisfies(err -> {
            assertThat(err.source()).isEqualTo(missing.toString());
            assertThat(err.message()).startsWith("cannot read");
        });
    }

    @Test
    void notUtf8(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("latin1.yaml");
        Files.write(file, new byte[] {'v', 'e', 'r', 's', 'i', 'o', 'n', ':', ' ', '1', '\n', '#', (byte) 0xe9, '\n'});
        assertThatThrownBy(() -> PolicyLoader.load(file)).isInstanceOf(PolicyException.class).hasMessageContaining("UTF-8");
    }

    @Test
    void embeddedDefault() throws Exception {
        Policy p = PolicyLoader.embeddedDefault();
        assertThat(p.source()).isEqualTo("embedded:default-policy.yaml");
        assertThat(p.mode()).isEqualTo(Mode.ENFORCE);
        assertThat(p.extensions()).containsOnlyKeys("default");
        Extension d = p.defaultExtension().orElseThrow();
        assertThat(d.tokenSha256()).isNull();
        assertThat(d.allow()).extracting(Rule::host).containsExactly("api.openai.com", "api.anthropic.com",
                "generativelanguage.googleapis.com", "*.openai.azure.com", "openrouter.ai", "api.groq.com");
        assertThat(d.allow()).allSatisfy(r -> assertThat(r.ports()).containsExactly(443));
        assertThat(p.listen().proxy().getPort()).isEqualTo(3128);
        assertThat(p.sha256Hex()).hasSize(64);
    }

    @ParameterizedTest(name = "{0}:{1} -> {2} {3}")
    @CsvSource(delimiter = '|', textBlock = """
            api.anthropic.com:443           | ALLOW | ALLOWLISTED      | groups.llm[1]
            myres.openai.azure.com:443      | ALLOW | ALLOWLISTED      | groups.llm[3]
            openai.azure.com:443            | DENY  | NOT_ALLOWLISTED  | implicit-deny
            api.openai.com:80               | DENY  | PORT_NOT_ALLOWED | groups.llm[0]
            github.com:443                  | DENY  | NOT_ALLOWLISTED  | implicit-deny
            """)
    void embeddedDefaultDecisions(String target, Verdict verdict, Reason reason, String ruleId) throws Exception {
        Policy p = PolicyLoader.embeddedDefault();
        Decision d = Decider.decide(p, p.defaultExtension().orElseThrow(), TargetParser.parseAuthority(target), null);
        assertThat(d.verdict()).isEqualTo(verdict);
        assertThat(d.reason()).isEqualTo(reason);
        assertThat(d.ruleId()).isEqualTo(ruleId);
    }

    @Test
    void authenticate() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                extensions:
                  a:
                    auth: { token_sha256: "%s" }
                  b: {}
                """.formatted(TOKEN_SHA.toUpperCase()), "auth.yaml");
        assertThat(p.authenticate("a", TOKEN)).map(Extension::name).hasValue("a");
        assertThat(p.authenticate("a", TOKEN + "x")).isEmpty();
        assertThat(p.authenticate("a", "")).isEmpty();
        assertThat(p.authenticate("b", TOKEN)).isEmpty();
        assertThat(p.authenticate("c", TOKEN)).isEmpty();
        assertThat(p.authenticate(null, TOKEN)).isEmpty();
        assertThat(p.extension("a").orElseThrow().toString()).contains("****").doesNotContain(TOKEN_SHA);
    }

    // ---- errors ----

    @Test
    void collectsEveryErrorWithLineAndColumn() {
        List<String> errors = errors("""
                version: 1
                mode: loud
                extensions:
                  github:
                    alow: []
                    allow:
                      - host: "api.*.com"
                      - host: example.com
                        ports: [70000, 443, 443]
                      - cidr: 10.0.0.1/8
                      - host: a.com
                        cidr: 10.0.0.0/8
                      - ports: [443]
                      - host: "*.ok.com"
                        methods: [get]
                        paths: ["no-slash", "/a**"]
                    groups: [nope]
                limits:
                  idle_timeout: 120
                  max_inspected_body: 32MB
                inspect:
                  api.anthropic.com: { pin_mode: loose }
                """);
        assertThat(errors).containsExactly(
                "p.yaml:2:7: mode: loud (expected: enforce or report)",
                "p.yaml:5:5: extensions.github.alow: unknown key (expected one of: auth, sources, allow, deny, groups, credentials)",
                "p.yaml:7:15: extensions.github.allow[0].host: api.*.com (expected: an exact name, or *.suffix; '*' only as the whole first label)",
                "p.yaml:9:17: extensions.github.allow[1].ports[0]: 70000 (expected: 1..65535)",
                "p.yaml:9:29: extensions.github.allow[1].ports[2]: 443 listed twice",
                "p.yaml:10:15: extensions.github.allow[2].cidr: 10.0.0.1/8: host bits set (expected: 10.0.0.0/8)",
                "p.yaml:11:9: extensions.github.allow[3]: both host and cidr (expected: exactly one of host, cidr)",
                "p.yaml:13:9: extensions.github.allow[4]: neither host nor cidr (expected: exactly one of host, cidr)",
                "p.yaml:15:19: extensions.github.allow[5].methods[0]: get (expected: an upper-case method such as GET; methods are case-sensitive)",
                "p.yaml:16:17: extensions.github.allow[5].paths[0]: no-slash (expected: a path glob starting with /)",
                "p.yaml:16:29: extensions.github.allow[5].paths[1]: /a** (expected: '**' as a whole segment, e.g. /a/**/b)",
                "p.yaml:17:14: extensions.github.groups[0]: nope is not defined (expected one of: none defined under groups)",
                "p.yaml:19:17: limits.idle_timeout: 120 (expected: a duration such as 15s, 500ms, 2m, 1h)",
                "p.yaml:20:23: limits.max_inspected_body: 32MB (expected: bytes, or a size such as 64KiB, 32MiB, 1GiB)",
                "p.yaml:22:34: inspect.api.anthropic.com.pin_mode: loose (expected: enforce or report)");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            missing version        | mode: enforce                                                     | p.yaml:1:1: version: missing (expected: 1)
            version 2              | version: 2                                                        | p.yaml:1:10: version: 2 (expected: 1)
            version as string      | version: "1"                                                      | p.yaml:1:10: version: 1 (expected: 1)
            unknown top key        | version: 1\\nextension: {}                                        | p.yaml:2:1: extension: unknown key (expected one of: version, mode, extensions, groups, deny, network, listen, limits, audit, inspect, tls, redaction, upstream_proxy, include, approvals, credentials, red_flags, alerts, capture)
            redaction bad action   | version: 1\\nredaction: {action: shred}                           | p.yaml:2:21: redaction.action: shred (expected: redact, block or report)
            tls unknown key        | version: 1\\ntls: {extra: [a.pem]}                                | p.yaml:2:7: tls.extra: unknown key (expected one of: extra_trust)
            bad pin                | version: 1\\ninspect: {a.test: {pins: [sha256/x]}}              | p.yaml:2:27: inspect.a.test.pins[0]: sha256/x (expected: sha256/ followed by the base64 of 32 bytes)
            transparent no port    | version: 1\\nlisten:\\n  transparent: 10.200.0.1                  | p.yaml:3:16: listen.transparent: 10.200.0.1: missing port (expected: address:port, e.g. 127.0.0.1:3128 or [::1]:3128)
            dns without transparent| version: 1\\nlisten:\\n  dns: 10.200.0.1:53                       | p.yaml:3:8: listen.dns: needs listen.transparent with a specific address to answer with (expected: e.g. transparent: 10.200.0.1:15001, not 0.0.0.0 or absent)
            dns wildcard answer    | version: 1\\nlisten:\\n  transparent: 0.0.0.0:15001\\n  dns: 10.200.0.1:53 | p.yaml:4:8: listen.dns: needs listen.transparent with a specific address to answer with (expected: e.g. transparent: 10.200.0.1:15001, not 0.0.0.0 or absent)
            dns name refused       | version: 1\\nlisten:\\n  transparent: 10.200.0.1:15001\\n  dns: localhost | p.yaml:4:8: listen.dns: localhost (expected: address[:port], e.g. 127.0.0.53 or [::1]:53)
            listen needs port      | version: 1\\nlisten:\\n  proxy: 127.0.0.1                         | p.yaml:3:10: listen.proxy: 127.0.0.1: missing port (expected: address:port, e.g. 127.0.0.1:3128 or [::1]:3128)
            listen name refused    | version: 1\\nlisten:\\n  proxy: localhost:3128                    | p.yaml:3:10: listen.proxy: localhost:3128 (expected: address:port, e.g. 127.0.0.1:3128 or [::1]:3128)
            duplicate key          | version: 1\\nmode: enforce\\nmode: report                         | p.yaml:3:1: duplicate key "mode"
            yaml syntax            | version: 1\\nextensions: [a, b                                    | p.yaml:2:18: YAML syntax: while parsing a flow sequence
            alias                  | version: 1\\ngroups:\\n  a: &r [{host: a.com}]\\n  b: *r          | p.yaml:4:6: YAML aliases are not supported (expected: the value written out)
            root not a mapping     | [1, 2]                                                            | p.yaml:1:1: policy: a list (expected: a mapping)
            empty document         | ''                                                                | p.yaml:1:1: empty document (expected: a mapping with version: 1)
            token not hex          | version: 1\\nextensions:\\n  a:\\n    auth: {token_sha256: abc}    | p.yaml:4:26: extensions.a.auth.token_sha256: 3 characters (expected: 64 hex digits, the SHA-256 of the token)
            token missing          | version: 1\\nextensions:\\n  a:\\n    auth: {}                     | p.yaml:4:11: extensions.a.auth.token_sha256: missing (expected: 64 hex digits, see `sluice token new`)
            bad extension name     | version: 1\\nextensions:\\n  "a b": {}                            | p.yaml:3:3: extensions.a b: bad extension name (expected: [A-Za-z0-9][A-Za-z0-9._-]{0,63})
            bad source             | version: 1\\nextensions:\\n  a:\\n    sources: [10.0.0.0/33]       | p.yaml:4:15: extensions.a.sources[0]: "10.0.0.0/33": prefix length 33 (expected: 0..32)
            mapped source too wide | version: 1\\nextensions:\\n  a:\\n    sources: ["::ffff:0:0/96"]   | p.yaml:4:15: extensions.a.sources[0]: "::ffff:0:0/96": IPv4-mapped prefix shorter than /104 would cover a large IPv4 range (expected: write the IPv4 prefix)
            host with IP literal   | version: 1\\ndeny:\\n  - host: 0x7f.1                            | p.yaml:3:11: deny[0].host: 0x7f.1 is an IP literal (expected: a DNS name; use cidr: 127.0.0.1/32 for an address)
            host bare star         | version: 1\\ndeny:\\n  - host: "*"                               | p.yaml:3:11: deny[0].host: * (expected: an exact name, or *.suffix; '*' only as the whole first label)
            host two trailing dots | version: 1\\ndeny:\\n  - host: a.com..                           | p.yaml:3:11: deny[0].host: host: "a.com..": more than one trailing dot
            host numeric tld       | version: 1\\ndeny:\\n  - host: a.123                             | p.yaml:3:11: deny[0].host: host: "a.123": ends in a number but is not an IPv4 address
            ports empty            | version: 1\\ndeny:\\n  - {host: a.com, ports: []}                | p.yaml:3:26: deny[0].ports: empty (expected: at least one port; omit ports for every port)
            port octal-looking     | version: 1\\ndeny:\\n  - {host: a.com, ports: [0443]}            | p.yaml:3:27: deny[0].ports[0]: 0443 (expected: an integer 1..65535)
            port as string         | version: 1\\ndeny:\\n  - {host: a.com, ports: ["443"]}           | p.yaml:3:27: deny[0].ports[0]: 443 (expected: an integer 1..65535)
            rule not a mapping     | version: 1\\ndeny:\\n  - a.com                                   | p.yaml:3:5: deny[0]: a.com (expected: a mapping)
            rule unknown key       | version: 1\\ndeny:\\n  - {host: a.com, hots: x}                  | p.yaml:3:19: deny[0].hots: unknown key (expected one of: host, cidr, ports, methods, paths, tls_only)
            hosts value            | version: 1\\nnetwork:\\n  hosts:\\n    a.test: example.com          | p.yaml:4:13: network.hosts.a.test: example.com (expected: an IP address such as 10.0.0.5 or fd00::5)
            hosts key literal      | version: 1\\nnetwork:\\n  hosts:\\n    10.0.0.1: 10.0.0.2            | p.yaml:4:5: network.hosts.10.0.0.1: an IP literal (expected: a DNS name)
            audit unknown key      | version: 1\\naudit: {max_files: 3}                              | p.yaml:2:9: audit.max_files: unknown key (expected one of: path, max_file_bytes, keep_files, format, stdout)
            audit size unit        | version: 1\\naudit: {max_file_bytes: 64MB}                      | p.yaml:2:25: audit.max_file_bytes: 64MB (expected: bytes, or a size such as 64KiB, 32MiB, 1GiB)
            audit size zero        | version: 1\\naudit:\\n  max_file_bytes: 0                       | p.yaml:3:19: audit.max_file_bytes: 0 (expected: 1..9223372036854775807 bytes)
            audit keep zero        | version: 1\\naudit:\\n  keep_files: 0                           | p.yaml:3:15: audit.keep_files: 0 (expected: 1..1000)
            audit keep string      | version: 1\\naudit:\\n  keep_files: "3"                         | p.yaml:3:15: audit.keep_files: 3 (expected: an integer 1..1000)
            allow_private bad      | version: 1\\nnetwork:\\n  allow_private: [10.0.0.0/8/8]           | p.yaml:3:19: network.allow_private[0]: "10.0.0.0/8/8": prefix length (expected: 0..32)
            resolver name          | version: 1\\nnetwork:\\n  resolvers: [dns.google]                | p.yaml:3:15: network.resolvers[0]: dns.google (expected: address[:port], e.g. 127.0.0.53 or [::1]:53)
            zero duration          | version: 1\\nlimits:\\n  header_timeout: 0s                        | p.yaml:3:19: limits.header_timeout: 0s (expected: > 0)
            header bytes too big   | version: 1\\nlimits:\\n  max_header_bytes: 4GiB                   | p.yaml:3:21: limits.max_header_bytes: 4GiB (expected: 1..2147483647 bytes)
            connections zero       | version: 1\\nlimits:\\n  max_connections_per_extension: 0         | p.yaml:3:34: limits.max_connections_per_extension: 0 (expected: 1..2147483647)
            audit path empty       | version: 1\\naudit:\\n  path: ''                                  | p.yaml:3:9: audit.path: empty (expected: a file path)
            group listed twice     | version: 1\\ngroups: {g: []}\\nextensions:\\n  a: {groups: [g, g]} | p.yaml:4:19: extensions.a.groups[1]: g listed twice
            """)
    void singleError(String scenario, String yaml, String expected) {
        List<String> errors = errors(yaml.replace("\\n", "\n"));
        assertThat(errors).as(scenario).hasSize(1);
        assertThat(errors.get(0)).as(scenario).startsWith(expected);
    }

    @Test
    void sameTokenTwiceAndOverlappingSources() {
        List<String> errors = errors("""
                version: 1
                extensions:
                  a:
                    auth: { token_sha256: "%s" }
                    sources: ["10.200.1.0/24"]
                  b:
                    auth: { token_sha256: "%s" }
                    sources: ["10.200.1.7/32", "10.200.2.0/24"]
                """.formatted(TOKEN_SHA, TOKEN_SHA.toUpperCase()));
        assertThat(errors).containsExactly(
                "p.yaml:7:27: extensions.b.auth.token_sha256: same token as the extension at line 4 (expected: one token per extension)",
                "p.yaml:8:15: extensions.b.sources: 10.200.1.7/32 overlaps 10.200.1.0/24 of extension a (expected: each source address identifies one extension)");
    }

    @Test
    void duplicateAndShadowedRules() {
        List<String> errors = errors("""
                version: 1
                extensions:
                  a:
                    allow:
                      - host: "*.example.com"
                      - host: api.example.com
                        ports: [443]
                      - host: a.b.example.com
                      - host: "*.x.example.com"
                        methods: [GET]
                      - host: example.com
                      - host: EXAMPLE.com.
                      - cidr: 10.0.0.0/8
                        ports: [443, 8443]
                      - cidr: 10.1.0.0/16
                        ports: [443]
                      - cidr: ::ffff:10.2.0.0/112
                        ports: [8443]
                      - cidr: 10.3.0.0/16
                      - host: other.test
                        ports: [8080]
                      - host: other.test
                        ports: [8080, 9090]
                    deny:
                      - host: "*.evil.test"
                        ports: [443]
                      - host: a.evil.test
                      - host: b.evil.test
                        ports: [443]
                groups:
                  g:
                    - host: "*.example.com"
                      paths: ["/a/**"]
                    - host: x.example.com
                      paths: ["/a/**", "/b"]
                    - host: y.example.com
                      paths: ["/a/**"]
                      methods: [GET]
                deny:
                  - cidr: 192.0.2.0/24
                  - cidr: 192.0.2.1
                    ports: [80]
                """);
        assertThat(errors).containsExactly(
                "p.yaml:6:9: extensions.a.allow[1]: shadowed by extensions.a.allow[0], which already matches everything it matches (expected: remove it, or place it before extensions.a.allow[0])",
                "p.yaml:8:9: extensions.a.allow[2]: shadowed by extensions.a.allow[0], which already matches everything it matches (expected: remove it, or place it before extensions.a.allow[0])",
                "p.yaml:9:9: extensions.a.allow[3]: shadowed by extensions.a.allow[0], which already matches everything it matches (expected: remove it, or place it before extensions.a.allow[0])",
                "p.yaml:12:9: extensions.a.allow[5]: duplicate of extensions.a.allow[4] (expected: each rule once)",
                "p.yaml:15:9: extensions.a.allow[7]: shadowed by extensions.a.allow[6], which already matches everything it matches (expected: remove it, or place it before extensions.a.allow[6])",
                "p.yaml:17:9: extensions.a.allow[8]: shadowed by extensions.a.allow[6], which already matches everything it matches (expected: remove it, or place it before extensions.a.allow[6])",
                "p.yaml:28:9: extensions.a.deny[2]: shadowed by extensions.a.deny[0], which already matches everything it matches (expected: remove it, or place it before extensions.a.deny[0])",
                "p.yaml:36:7: groups.g[2]: shadowed by groups.g[0], which already matches everything it matches (expected: remove it, or place it before groups.g[0])",
                "p.yaml:41:5: deny[1]: shadowed by deny[0], which already matches everything it matches (expected: remove it, or place it before deny[0])");
    }

    @Test
    void unquotedAllDigitTokenHash() throws Exception {
        String digits = "1234567890".repeat(6) + "1234";
        Policy p = PolicyLoader.parse("version: 1\nextensions:\n  a:\n    auth: {token_sha256: " + digits + "}\n", "p.yaml");
        assertThat(p.extension("a").orElseThrow().tokenSha256()).isEqualTo(HexFormat.of().parseHex(digits));
    }

    @Test
    void errorsNeverEchoTheTokenHash() {
        List<String> errors = errors("version: 1\nextensions:\n  a:\n    auth: {token_sha256: \"" + TOKEN_SHA + "z\"}\n");
        assertThat(errors).singleElement().asString().doesNotContain(TOKEN_SHA);
    }

    @Test
    void portsDefaultIsEmptySetMeaning80And443() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\nextensions:\n  a:\n    allow: [{host: a.com}]\n", "p.yaml");
        Rule r = p.extension("a").orElseThrow().allow().get(0);
        assertThat(r.ports()).isEmpty();
        assertThat(r.methods()).isEmpty();
        assertThat(r.paths()).isEmpty();
        assertThat(Set.of(80, 443)).allSatisfy(port -> assertThat(
                Decider.decide(p, p.extension("a").orElseThrow(), TargetParser.canonicalHost("a.com", port), null).verdict())
                .isEqualTo(Verdict.ALLOW));
    }

    @org.junit.jupiter.api.Test
    void inspectSectionWithTofuExplicitPinsAndWildcards() throws Exception {
        Policy policy = PolicyLoader.parse("""
                version: 1
                inspect:
                  API.Anthropic.com.: { pins: tofu, pin_mode: report }
                  api.openai.com: { pins: ["sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="], redact: false }
                  "*.openai.azure.com": {}
                tls:
                  extra_trust: [corp-root.pem]
                """, "p.yaml");
        assertThat(policy.inspected("api.anthropic.com")).get().satisfies(h -> {
            assertThat(h.pinKind()).isEqualTo(InspectedHost.PinKind.TOFU);
            assertThat(h.pinReportOnly()).isTrue();
            assertThat(h.redact()).isTrue();
        });
        assertThat(policy.inspected("api.openai.com")).get().satisfies(h -> {
            assertThat(h.pinKind()).isEqualTo(InspectedHost.PinKind.EXPLICIT);
            assertThat(h.pins()).hasSize(1);
            assertThat(h.redact()).isFalse();
        });
        assertThat(policy.inspected("res.openai.azure.com")).get()
                .extracting(InspectedHost::pinKind).isEqualTo(InspectedHost.PinKind.NONE);
        assertThat(policy.inspected("openai.azure.com")).isEmpty();
        assertThat(policy.inspected("example.com")).isEmpty();
        assertThat(policy.tls().extraTrust()).containsExactly(java.nio.file.Path.of("corp-root.pem"));
    }

    @org.junit.jupiter.api.Test
    void inspectWebsocketModeDefaultsByRedactAndIsValidatedWithFileAndLine() throws Exception {
        Policy policy = PolicyLoader.parse("""
                version: 1
                inspect:
                  a.test: {}
                  b.test: { redact: false }
                  c.test: { websocket: refuse }
                  d.test: { redact: false, websocket: inspect }
                """, "p.yaml");
        assertThat(policy.inspected("a.test").orElseThrow().websocket()).isEqualTo(WebSocketMode.INSPECT);
        assertThat(policy.inspected("b.test").orElseThrow().websocket()).isEqualTo(WebSocketMode.RELAY);
        assertThat(policy.inspected("c.test").orElseThrow().websocket()).isEqualTo(WebSocketMode.REFUSE);
        assertThat(policy.inspected("d.test").orElseThrow().websocket()).isEqualTo(WebSocketMode.INSPECT);
        assertThat(errors("""
                version: 1
                inspect:
                  a.test: { websocket: tunnel }
                  b.test: { websocket: 1 }
                """)).containsExactly(
                "p.yaml:3:24: inspect.a.test.websocket: tunnel (expected: refuse, relay or inspect)",
                "p.yaml:4:24: inspect.b.test.websocket: 1 (expected: a string)");
    }
}
