package dev.sluice.proxy.credential;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.proxy.testing.ManualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Credential sources: env, file, JSON key, command with ttl (refresh, failed refresh, expiry), failures at load. */
class CredentialVaultTest {

    @TempDir
    Path dir;
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        scheduler.shutdownNow();
    }

    private Policy policy(String credentials) throws PolicyException {
        return PolicyLoader.parse("""
                version: 1
                inspect: { api.llm.test: {} }
                credentials:
                """ + credentials, dir.resolve("p.yaml").toString());
    }

    private static final String INJECT = "    inject: { hosts: [api.llm.test], header: authorization }\n";

    @Test
    void envFileAndJsonKeyAreReadAtLoadAndMasked() throws Exception {
        Files.writeString(dir.resolve("k"), "\n  file-secret \n");
        Files.writeString(dir.resolve("k.yaml"), "other: x\ntoken: yaml-secret\n");
        Policy p = policy("  a:\n    source: { env: SECRET_A }\n" + INJECT
                + "  b:\n    source: { file: \"" + dir.resolve("k") + "\" }\n" + INJECT.replace("authorization", "x-b")
                + "  c:\n    source: { file: \"" + dir.resolve("k.yaml") + "\", key: token }\n"
                + INJECT.replace("authorization", "x-c"));
        CredentialVault vault = CredentialVault.load(p, Clock.systemUTC(), null,
                Map.of("SECRET_A", "env-secret")::get);
        assertThat(vault.value("a")).isEqualTo("env-secret");
        assertThat(vault.value("b")).isEqualTo("file-secret");
        assertThat(vault.value("c")).isEqualTo("yaml-secret");
        assertThat(vault.toString()).doesNotContain("secret-");
        assertThat(new Secret("file-secret", Instant.MAX).toString()).doesNotContain("file-secret");
    }

    @Test
    void anUnreadableSourceFailsTheLoadUnlessOptional() throws Exception {
        Policy required = policy("  a:\n    source: { env: MISSING }\n" + INJECT);
        assertThatThrownBy(() -> CredentialVault.load(required, Clock.systemUTC(), null, name -> null))
                .isInstanceOf(CredentialLoadException.class)
                .hasMessage("credentials.a.source: environment variable MISSING is not set");
        Policy optional = policy("  a:\n    source: { file: \"" + dir.resolve("absent") + "\" }\n    optional: true\n"
                + INJECT);
        assertThat(CredentialVault.load(optional, Clock.systemUTC(), null, name -> null).value("a")).isNull();
    }

    @Test
    void aServerDoesNotStartWithACredentialItCannotRead() {
        assertThatThrownBy(() -> SluiceFixture.start("""
                version: 1
                inspect: { api.llm.test: {} }
                credentials:
                  a:
                    source: { file: "%s" }
                    inject: { hosts: [api.llm.test], header: authorization }
                """.formatted(dir.resolve("absent")))).isInstanceOf(PolicyException.class)
                .hasMessageContaining("credentials.a.source: cannot read");
    }

    @Test
    void aCommandIsRefreshedBeforeItsTtlAndAFailedRefreshKeepsTheValueUntilItExpires() throws Exception {
        Path value = dir.resolve("value");
        Path runs = dir.resolve("runs");
        Files.writeString(value, "v1\n");
        Files.writeString(runs, "");
        // the test's program is a shell; Sluice itself runs argv as given, without one
        String script = "echo x >> '" + runs + "'; cat '" + value + "'";
        Policy p = policy("  a:\n    source: { command: [sh, -c, \"" + script + "\"], ttl: 1s }\n" + INJECT);
        ManualClock clock = new ManualClock(Instant.parse("2026-01-01T00:00:00Z"));
        CredentialVault vault = CredentialVault.load(p, clock, scheduler, name -> null);
        assertThat(vault.value("a")).isEqualTo("v1");

        Files.writeString(value, "v2\n");
        await().atMost(Duration.ofSeconds(10)).until(() -> "v2".equals(vault.value("a")));

        Files.delete(value); // cat fails from now on
        long before = Files.readAllLines(runs).size();
        await().atMost(Duration.ofSeconds(10)).until(() -> Files.readAllLines(runs).size() >= before + 2);
        assertThat(vault.value("a")).as("kept after failed refreshes").isEqualTo("v2");
        clock.advance(Duration.ofSeconds(2));
        assertThat(vault.value("a")).as("expired").isNull();
        vault.close();
    }

    @Test
    void aCommandThatPrintsTooMuchOrFailsIsRefused() throws Exception {
        Policy big = policy("  a:\n    source: { command: [sh, -c, \"head -c 1100000 /dev/zero | tr '\\\\\\\\0' a\"] }\n"
                + INJECT);
        assertThatThrownBy(() -> CredentialVault.load(big, Clock.systemUTC(), null, name -> null))
                .hasMessageContaining("printed more than 1 MiB");
        Policy failing = policy("  a:\n    source: { command: [sh, -c, \"exit 3\"] }\n" + INJECT);
        assertThatThrownBy(() -> CredentialVault.load(failing, Clock.systemUTC(), null, name -> null))
                .hasMessageContaining("exited with status 3");
        Policy missing = policy("  a:\n    source: { command: [/nonexistent/program] }\n" + INJECT);
        assertThatThrownBy(() -> CredentialVault.load(missing, Clock.systemUTC(), null, name -> null))
                .hasMessageContaining("cannot run /nonexistent/program");
    }
}
