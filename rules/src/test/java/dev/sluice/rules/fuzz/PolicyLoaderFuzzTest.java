package dev.sluice.rules.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyError;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.nio.charset.StandardCharsets;

/**
 * Fuzzes the policy loader: any text either loads or fails with a {@link PolicyException} whose every
 * error has a message (fail closed, loudly), never another exception. Seeds: {@code PolicyLoaderFuzzTestInputs/} (the
 * shipped example policies and small broken ones).
 */
class PolicyLoaderFuzzTest {

    @FuzzTest(maxDuration = "30s")
    void parse(byte[] input) {
        String yaml = new String(input, StandardCharsets.UTF_8);
        Policy policy;
        try {
            policy = PolicyLoader.parse(yaml, "fuzz.yaml");
        } catch (PolicyException e) {
            assertThat(e.errors()).isNotEmpty();
            for (PolicyError error : e.errors()) {
                assertThat(error.message()).isNotEmpty();
            }
            return;
        }
        assertThat(policy.extensions()).isNotNull();
        assertThat(policy.sha256Hex()).hasSize(64);
    }
}
