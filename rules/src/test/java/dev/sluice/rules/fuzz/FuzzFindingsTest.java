package dev.sluice.rules.fuzz;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Findings of the fuzz targets, each kept as a plain regression test (the input itself also stays in
 * the target's seed corpus, named {@code finding-*}).
 */
class FuzzFindingsTest {

    /**
     * PolicyLoaderFuzzTest: a custom redaction pattern whose character range holds a non-ASCII byte
     * (0xb0, decoded as U+FFFD, starts a descending range) does not compile. Jazzer's regex-injection
     * sanitizer reported the failed compile; the loader's answer is the right one, a policy error at
     * the pattern's line (policy patterns are written by the operator, by design, so that sanitizer is
     * off for these targets: src/test/resources/junit-platform.properties).
     */
    @Test
    void customPatternWithABadRangeIsAPolicyErrorAtItsLine() throws Exception {
        String yaml;
        try (InputStream in = getClass().getResourceAsStream(
                "PolicyLoaderFuzzTestInputs/parse/finding-custom-pattern-bad-range")) {
            yaml = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertThatThrownBy(() -> PolicyLoader.parse(yaml, "fuzz.yaml"))
                .isInstanceOfSatisfying(PolicyException.class, e -> assertThat(e.errors())
                        .anySatisfy(error -> {
                            assertThat(error.message()).contains("redaction.custom[0].pattern: bad regular expression");
                            assertThat(error.line()).isEqualTo(9);
                        }));
    }
}
