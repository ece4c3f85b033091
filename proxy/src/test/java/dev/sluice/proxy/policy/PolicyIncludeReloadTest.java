package dev.sluice.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hot reload watches the fragments a policy includes: a change to one reloads, a broken or missing one
 * keeps the running policy (fail closed), over real sockets with curl.
 */
class PolicyIncludeReloadTest {

    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @TempDir
    Path overlays;

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private void writeFragment(Path file, String text) throws Exception {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, text);
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private int get(String host) {
        return Curl.run(List.of("-x", sluice.proxyUrl(), "http://" + host + ":" + origin.port() + "/")).httpStatus();
    }

    @Test
    void aChangedFragmentReloadsAndABrokenOneKeepsTheRunningPolicy() throws Exception {
        origin = new RecordingOrigin();
        Path fragment = overlays.resolve("approved.yaml");
        writeFragment(fragment, "extensions: {default: {allow: [{host: first.test, ports: [" + origin.port() + "]}]}}\n");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow: []
                include: ["%s"]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    first.test: 127.0.0.1
                    second.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(fragment));
        sluice.reloader().startWatching();
        assertThat(get("first.test")).isEqualTo(200);
        assertThat(get("second.test")).isEqualTo(403);

        // Editing only the fragment (in another directory than the policy file) reloads.
        writeFragment(fragment, "extensions: {default: {allow: [{host: second.test, ports: [" + origin.port() + "]}]}}\n");
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadsOk() == 1);
        assertThat(get("second.test")).isEqualTo(200);
        assertThat(get("first.test")).isEqualTo(403);

        // A broken fragment never replaces the running policy; the error names the fragment's line.
        writeFragment(fragment, "extensions:\n  default:\n    allow: [{host: first.test, ports: [0]}]\n");
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadErrors() == 1);
        assertThat(sluice.reloader().lastErrors()).singleElement().asString()
                .startsWith(fragment + ":3:").contains("ports[0]: 0 (expected:");
        assertThat(get("second.test")).isEqualTo(200);
        assertThat(get("first.test")).isEqualTo(403);

        // A deleted fragment is an error too, and the running policy stays.
        Files.delete(fragment);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadErrors() == 2);
        assertThat(sluice.reloader().lastErrors()).singleElement().asString()
                .contains("include[0]: cannot read " + fragment);
        assertThat(get("second.test")).isEqualTo(200);

        // Fixed: loads again.
        writeFragment(fragment, "extensions: {default: {allow: [{host: first.test, ports: [" + origin.port() + "]}]}}\n");
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadsOk() == 2);
        assertThat(get("first.test")).isEqualTo(200);
        assertThat(get("second.test")).isEqualTo(403);
    }
}
