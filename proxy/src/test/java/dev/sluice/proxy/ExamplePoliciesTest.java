package dev.sluice.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The policies the repository ships as examples (docker/, deploy/) load, and none of them puts the admin
 * listener ({@code /metrics}, {@code /policy}) beyond loopback unless the file says so on the line
 * above ({@code # admin: beyond loopback on purpose: ...}).
 */
class ExamplePoliciesTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    private static List<Path> examplePolicies() throws IOException {
        try (Stream<Path> files = Stream.of("docker", "deploy").map(ROOT::resolve).filter(Files::isDirectory)
                .flatMap(dir -> {
                    try {
                        return Files.walk(dir).toList().stream();
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                })) {
            return files.filter(f -> f.getFileName().toString().matches("(?i).*polic.*\\.ya?ml"))
                    .filter(f -> {
                        try {
                            return Files.readString(f).contains("\nversion: 1");
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    })
                    .toList();
        }
    }

    @Test
    void everyExamplePolicyLoadsAndKeepsAdminOnLoopback() throws Exception {
        List<Path> policies = examplePolicies();
        assertThat(policies).as("docker/policy.yaml at least").isNotEmpty();
        for (Path file : policies) {
            String yaml = Files.readString(file);
            Policy policy = PolicyLoader.parse(yaml, file.toString());
            InetSocketAddress admin = policy.listen().admin();
            if (admin == null || admin.getAddress().isLoopbackAddress()) {
                continue;
            }
            assertThat(yaml).as(file + ": listen.admin " + admin + " is beyond loopback; say so on purpose")
                    .containsPattern("(?m)^\\s*# admin: beyond loopback on purpose");
        }
    }
}
