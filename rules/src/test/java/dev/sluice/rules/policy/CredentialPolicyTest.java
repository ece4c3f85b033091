package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code credentials} map and {@code extensions.<name>.credentials}: loading and every error with file:line. */
class CredentialPolicyTest {

    private static final String BASE = """
            version: 1
            inspect:
              api.openai.com: {}
              "*.githubusercontent.test": {}
            extensions:
              agent:
                allow: [{host: api.openai.com}]
                credentials: [openai]
              other:
                allow: [{host: api.openai.com}]
            """;

    private static Policy load(String credentials) throws PolicyException {
        return PolicyLoader.parse(BASE + "credentials:\n" + credentials, "p.yaml");
    }

    private static String errors(String text) {
        try {
            PolicyLoader.parse(text, "p.yaml");
        } catch (PolicyException e) {
            return e.getMessage();
        }
        throw new AssertionError("loaded");
    }

    @Test
    void aFullEntryLoads() throws Exception {
        Policy p = load("""
                  openai:
                    source: {env: REAL_OPENAI_KEY}
                    placeholder_env: OPENAI_API_KEY
                    inject:
                      hosts: [api.openai.com]
                      paths: ["/v1/**"]
                      header: Authorization
                  gh:
                    source: {command: [gh, auth, token], ttl: 5m}
                    optional: true
                    inject: {hosts: [raw.githubusercontent.test], ports: [443, 8443], basic: true, query: [token]}
                """);
        Credential openai = p.credentials().get("openai");
        assertThat(openai.source()).isEqualTo(new Credential.Env("REAL_OPENAI_KEY"));
        assertThat(openai.placeholderEnv()).isEqualTo("OPENAI_API_KEY");
        assertThat(openai.inject().headers()).containsExactly("authorization");
        assertThat(openai.inject().covers("api.openai.com", 443, "/v1/chat?x=1")).isTrue();
        assertThat(openai.inject().covers("api.openai.com", 443, "/v2/chat")).isFalse();
        assertThat(openai.inject().covers("api.openai.com", 8443, "/v1/chat")).isFalse();
        assertThat(openai.inject().covers("evil.openai.com", 443, "/v1/chat")).isFalse();
        Credential gh = p.credentials().get("gh");
        assertThat(gh.optional()).isTrue();
        assertThat(gh.placeholderEnv()).isEqualTo("GH");
        assertThat(gh.source()).isEqualTo(new Credential.Command(List.of("gh", "auth", "token"), Duration.ofMinutes(5)));
        assertThat(gh.source().toString()).doesNotContain("token");
        assertThat(gh.inject().covers("raw.githubusercontent.test", 8443, "/x")).isTrue();
        assertThat(p.extension("agent").orElseThrow().credentials()).containsExactly("openai");
        assertThat(p.extension("other").orElseThrow().credentials()).isEmpty();
    }

    @Test
    void badEntriesAreRefusedWithTheirLine() {
        String text = BASE + """
                credentials:
                  openai:
                    source: {env: A, file: b}
                    inject: {hosts: [api.openai.com], header: authorization}
                  plain:
                    source: {env: B}
                    inject: {hosts: [example.org], header: x-api-key}
                  nowhere:
                    source: {file: k.json, key: token, ttl: 5m}
                    inject: {hosts: [api.openai.com]}
                  body:
                    source: {env: C}
                    placeholder_env: PLAIN
                    inject: {hosts: [api.openai.com], body: maybe}
                """;
        String message = errors(text);
        assertThat(message)
                .contains("p.yaml:13:13: credentials.openai.source: more than one of env, file, command")
                .contains("p.yaml:17:22: credentials.plain.inject.hosts[0]: example.org is not under inspect")
                .contains("credentials.nowhere.source.ttl: only a command source takes ttl")
                .contains("credentials.nowhere.inject: no place for the placeholder (expected: at least one of header, basic, query, body,"
                        + " sigv4)")
                .contains("credentials.body.placeholder_env: PLAIN is already the variable of the credential")
                .contains("credentials.body.inject.body: maybe (expected: true or false)");
    }

    @Test
    void anExtensionNamingAnUnknownCredentialIsRefused() {
        String message = errors("""
                version: 1
                extensions:
                  agent:
                    credentials: [openai, openai]
                """);
        assertThat(message).contains("p.yaml:4:19: extensions.agent.credentials[0]: openai is not defined")
                .contains("extensions.agent.credentials[1]: openai listed twice");
    }

    @Test
    void aGrantOfADeclaredButBrokenCredentialGetsOnlyTheCredentialsOwnError() {
        String message = errors(BASE + """
                credentials:
                  openai:
                    source: {env: A}
                    inject: {hosts: [api.openai.test], header: authorization}
                """);
        assertThat(message).contains("credentials.openai.inject.hosts[0]: api.openai.test is not under inspect")
                .doesNotContain("openai is not defined");
    }

    @Test
    void sigv4KeysLoadAndTheirConflictsAreRefusedWithTheirLine() throws Exception {
        Policy p = load("""
                  openai:
                    source: {file: aws.json}
                    inject: {hosts: [api.openai.com], sigv4: true, sigv4_unsigned_payload: true}
                """);
        Credential.Inject inject = p.credentials().get("openai").inject();
        assertThat(inject.sigv4()).isTrue();
        assertThat(inject.sigv4UnsignedPayload()).isTrue();
        assertThat(inject.headers()).isEmpty();

        String message = errors(BASE + """
                credentials:
                  openai:
                    source: {file: aws.json}
                    inject: {hosts: [api.openai.com], sigv4: true, header: authorization}
                  two:
                    source: {file: aws.json}
                    inject: {hosts: [api.openai.com], header: x-api-key, sigv4_unsigned_payload: true}
                  three:
                    source: {file: aws.json}
                    inject: {hosts: [api.openai.com], sigv4: maybe}
                """);
        assertThat(message)
                .contains("p.yaml:14:13: credentials.openai.inject: sigv4 with header authorization (expected: one;")
                .contains("p.yaml:17:13: credentials.two.inject: sigv4_unsigned_payload without sigv4")
                .contains("credentials.three.inject.sigv4: maybe (expected: true or false)");
    }
}
