package dev.sluice.proxy.server;

import dev.sluice.proxy.core.PolicyHolder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Kubernetes ConfigMap volume, reproduced on the file system: the kubelet writes each version into a
 * timestamped directory, points {@code ..data} at it with an atomic rename of a {@code ..data_tmp}
 * symlink, and the key ({@code policy.yaml}) is a symlink to {@code ..data/policy.yaml}; then it deletes
 * the old directory. The watching reloader must pick each swap up, and a broken version must keep the
 * running policy.
 */
class ConfigMapReloadTest {

    private static final String GOOD = "version: 1\nextensions:\n  default:\n    allow:\n      - host: a.example.org\n";
    private static final String BROKEN = "version: 1\nextensions:\n  default:\n    alow: []\n";
    private static final String NEWER = "version: 1\nextensions:\n  default:\n    allow:\n      - host: b.example.org\n";

    @TempDir
    Path volume;

    /** Does what the kubelet's AtomicWriter does for one new version of the ConfigMap. */
    private void kubeletWrites(String version, String policy) throws Exception {
        Path dir = volume.resolve("..2026_12_01_" + version);
        Files.createDirectory(dir);
        Files.writeString(dir.resolve("policy.yaml"), policy, StandardCharsets.UTF_8);
        Path old = Files.isSymbolicLink(volume.resolve("..data")) ? volume.resolve("..data").toRealPath() : null;
        Path tmp = volume.resolve("..data_tmp");
        Files.createSymbolicLink(tmp, dir.getFileName());
        Files.move(tmp, volume.resolve("..data"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        if (!Files.exists(volume.resolve("policy.yaml"), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            Files.createSymbolicLink(volume.resolve("policy.yaml"), Path.of("..data", "policy.yaml"));
        }
        if (old != null) {
            try (Stream<Path> files = Files.list(old)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(old);
        }
    }

    @Test
    void aSwappedConfigMapIsReloadedAndABrokenVersionKeepsTheRunningPolicy() throws Exception {
        kubeletWrites("a", GOOD);
        Path key = volume.resolve("policy.yaml");
        Policy initial = PolicyLoader.load(key);
        PolicyHolder holder = new PolicyHolder(initial, Clock.systemUTC());
        try (PolicyReloader reloader = new PolicyReloader(key, holder)) {
            reloader.startWatching();

            kubeletWrites("b", BROKEN);
            await().atMost(Duration.ofSeconds(10)).until(() -> reloader.reloadErrors() == 1);
            assertThat(holder.current().sha256Hex()).isEqualTo(initial.sha256Hex());
            assertThat(reloader.lastErrors()).extracting(Object::toString)
                    .anyMatch(e -> e.contains("extensions.default.alow: unknown key"));
            assertThat(reloader.reloadsOk()).isZero();

            kubeletWrites("c", NEWER);
            await().atMost(Duration.ofSeconds(10)).until(() -> reloader.reloadsOk() == 1);
            assertThat(holder.current().extension("default").orElseThrow().allow())
                    .extracting(r -> r.host()).containsExactly("b.example.org");
            assertThat(reloader.reloadErrors()).isEqualTo(1);
            assertThat(Files.isSymbolicLink(key)).isTrue();
        }
    }
}
