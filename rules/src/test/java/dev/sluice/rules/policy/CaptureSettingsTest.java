package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyLoaderTest.errors;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The {@code capture} section: parsing, its errors with file:line:column, host coverage and sampling. */
class CaptureSettingsTest {

    private static final String INSPECT = """
            version: 1
            inspect:
              api.anthropic.com: {}
              "*.openai.azure.com": {}
            """;

    @Test
    void absentMeansOff() throws Exception {
        assertThat(PolicyLoader.parse(INSPECT, "p.yaml").capture()).isNull();
        assertThat(PolicyLoader.parse(INSPECT + "capture: null\n", "p.yaml").capture()).isNull();
    }

    @Test
    void everyKeyIsRead() throws Exception {
        CaptureSettings c = PolicyLoader.parse(INSPECT + """
                capture:
                  hosts: [API.Anthropic.com., "*.openai.azure.com", x.openai.azure.com]
                  sample: 0.25
                  max_body_bytes: 4KiB
                  retention: 2d
                  max_total_bytes: 1GiB
                """, "p.yaml").capture();
        assertThat(c.hosts()).containsExactly("api.anthropic.com", "*.openai.azure.com", "x.openai.azure.com");
        assertThat(c.sample()).isEqualTo(0.25);
        assertThat(c.maxBodyBytes()).isEqualTo(4096);
        assertThat(c.retention()).isEqualTo(Duration.ofDays(2));
        assertThat(c.maxTotalBytes()).isEqualTo(1L << 30);
    }

    @Test
    void defaults() throws Exception {
        CaptureSettings c = PolicyLoader.parse(INSPECT + "capture: { hosts: [api.anthropic.com] }\n", "p.yaml").capture();
        assertThat(c.sample()).isEqualTo(1.0);
        assertThat(c.maxBodyBytes()).isEqualTo(256 * 1024);
        assertThat(c.retention()).isEqualTo(Duration.ofDays(7));
        assertThat(c.maxTotalBytes()).isEqualTo(256L << 20);
    }

    @Test
    void errorsNameTheirLine() {
        assertThat(errors(INSPECT + """
                capture:
                  hosts: [api.openai.com, "*.azure.com"]
                  sample: 1.5
                  max_body_bytes: 65MiB
                  retention: 0s
                  keep: 3
                """)).containsExactly(
                "p.yaml:6:11: capture.hosts[0]: api.openai.com is not inspected (expected: a host under inspect; only"
                        + " intercepted exchanges can be captured)",
                "p.yaml:6:27: capture.hosts[1]: *.azure.com is not inspected (expected: a host under inspect; only"
                        + " intercepted exchanges can be captured)",
                "p.yaml:7:11: capture.sample: 1.5 (expected: a number 0.0..1.0)",
                "p.yaml:8:19: capture.max_body_bytes: 65MiB (expected: 1..67108864 bytes)",
                "p.yaml:9:14: capture.retention: 0s (expected: > 0)",
                "p.yaml:10:3: capture.keep: unknown key (expected one of: hosts, sample, max_body_bytes, retention, max_total_bytes)");
        assertThat(errors(INSPECT + "capture: {}\n")).containsExactly(
                "p.yaml:5:10: capture.hosts: missing (expected: a non-empty list of inspected host names)");
        assertThat(errors(INSPECT + "capture: { hosts: [api.anthropic.com], sample: \"half\" }\n")).containsExactly(
                "p.yaml:5:48: capture.sample: half (expected: a number 0.0..1.0)");
    }

    @Test
    void coversExactHostsAndSubdomainsOfAWildcard() {
        CaptureSettings c = new CaptureSettings(List.of("api.anthropic.com", "*.openai.azure.com"), 1.0, 10,
                Duration.ofDays(1), 100);
        assertThat(c.covers("api.anthropic.com")).isTrue();
        assertThat(c.covers("x.api.anthropic.com")).isFalse();
        assertThat(c.covers("res.openai.azure.com")).isTrue();
        assertThat(c.covers("openai.azure.com")).isFalse();
        assertThat(c.covers("evilopenai.azure.com")).isFalse();
    }

    @Test
    void samplingIsDeterministicInTheEventIdAndNearTheShare() {
        CaptureSettings tenth = new CaptureSettings(List.of("h.example"), 0.1, 10, Duration.ofDays(1), 100);
        CaptureSettings none = new CaptureSettings(List.of("h.example"), 0.0, 10, Duration.ofDays(1), 100);
        CaptureSettings all = new CaptureSettings(List.of("h.example"), 1.0, 10, Duration.ofDays(1), 100);
        java.util.Random random = new java.util.Random(3);
        int sampled = 0;
        for (int i = 0; i < 20_000; i++) {
            String id = String.format("%016x", random.nextLong());
            boolean once = tenth.sampled(id);
            assertThat(tenth.sampled(id)).isEqualTo(once);
            sampled += once ? 1 : 0;
            assertThat(none.sampled(id)).isFalse();
            assertThat(all.sampled(id)).isTrue();
        }
        assertThat(sampled).isBetween(1800, 2200);
        assertThat(tenth.sampled("0000000000000000")).isTrue();
        assertThat(tenth.sampled("ffffffffffffffff")).isFalse();
    }
}
