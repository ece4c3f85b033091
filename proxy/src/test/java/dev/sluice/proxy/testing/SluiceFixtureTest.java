package dev.sluice.proxy.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** The fixture itself: it never depends on a fixed port (3128, 9901) being free, on start or restart. */
class SluiceFixtureTest {

    private static final String NO_LISTEN = """
            version: 1
            extensions:
              default:
                allow: []
            """;

    @Test
    void startAndRestartBindEphemeralPortsWhenThePolicyNamesNone() throws Exception {
        SluiceFixture first = SluiceFixture.start(NO_LISTEN);
        assertThat(first.port()).isNotEqualTo(3128);
        assertThat(first.server().adminAddress().getPort()).isNotEqualTo(9901);
        first.stop();
        // As InterceptionTest's TOFU test does: a new policy without a listen section, then a restart.
        Files.writeString(first.dataDir().resolve("policy.yaml"), NO_LISTEN, StandardCharsets.UTF_8);
        try (SluiceFixture second = SluiceFixture.restart(first.dataDir())) {
            assertThat(second.port()).isNotEqualTo(3128);
            assertThat(second.server().adminAddress().getPort()).isNotEqualTo(9901);
        }
    }

    @Test
    void ephemeralListenersKeepsWhatThePolicyNames() {
        String withAdmin = NO_LISTEN + "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n";
        assertThat(SluiceFixture.ephemeralListeners(withAdmin)).isEqualTo(withAdmin);
        assertThat(SluiceFixture.ephemeralListeners(NO_LISTEN + "listen:\n  proxy: 127.0.0.1:0\n"))
                .isEqualTo(NO_LISTEN + "listen:\n  admin: 127.0.0.1:0\n  proxy: 127.0.0.1:0\n");
        assertThat(SluiceFixture.ephemeralListeners(NO_LISTEN)).endsWith("listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n");
    }
}
