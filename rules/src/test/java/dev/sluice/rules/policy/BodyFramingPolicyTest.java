package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.redact.RedactionAction;
import org.junit.jupiter.api.Test;

/** {@code limits.max_buffered_body} and {@code redaction.binary}: defaults, values and errors with their place. */
class BodyFramingPolicyTest {

    @Test
    void defaultsAreOneMebibyteAndBlock() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\n", "p.yaml");
        assertThat(p.limits().maxBufferedBodyBytes()).isEqualTo(1 << 20);
        assertThat(p.redaction().binary()).isEqualTo(RedactionAction.BLOCK);
        Policy withSections = PolicyLoader.parse("version: 1\nlimits:\n  idle_timeout: 5s\nredaction:\n  action: report\n",
                "p.yaml");
        assertThat(withSections.limits().maxBufferedBodyBytes()).isEqualTo(1 << 20);
        assertThat(withSections.redaction().binary()).isEqualTo(RedactionAction.BLOCK);
    }

    @Test
    void valuesInTheSizeSyntaxAndBothBinaryWords() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                limits:
                  max_buffered_body: 256KiB
                redaction:
                  binary: report
                """, "p.yaml");
        assertThat(p.limits().maxBufferedBodyBytes()).isEqualTo(256 * 1024);
        assertThat(p.redaction().binary()).isEqualTo(RedactionAction.REPORT);
        assertThat(PolicyLoader.parse("version: 1\nlimits:\n  max_buffered_body: 4096\nredaction:\n  binary: block\n",
                "p.yaml").limits().maxBufferedBodyBytes()).isEqualTo(4096);
    }

    @Test
    void badValuesAreErrorsWithFileLineAndColumn() {
        assertThat(RedactionPolicyTest.errors("""
                version: 1
                limits:
                  max_buffered_body: 1MB
                redaction:
                  binary: redact
                """)).containsExactly(
                "p.yaml:3:22: limits.max_buffered_body: 1MB (expected: bytes, or a size such as 64KiB, 32MiB, 1GiB)",
                "p.yaml:5:11: redaction.binary: redact (expected: block or report)");
        assertThat(RedactionPolicyTest.errors("version: 1\nlimits:\n  max_buffered_body: 4GiB\n"))
                .containsExactly("p.yaml:3:22: limits.max_buffered_body: 4GiB (expected: 1..2147483647 bytes)");
        assertThat(RedactionPolicyTest.errors("version: 1\nredaction:\n  binary: [block]\n"))
                .containsExactly("p.yaml:3:11: redaction.binary: a list (expected: a string)");
    }
}
