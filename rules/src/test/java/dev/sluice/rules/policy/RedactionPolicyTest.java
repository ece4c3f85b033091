package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BuiltinDetectors;
import dev.sluice.rules.redact.Detector;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class RedactionPolicyTest {

    static List<String> errors(String yaml) {
        PolicyException e = catchThrowableOfType(PolicyException.class, () -> PolicyLoader.parse(yaml, "p.yaml"));
        assertThat(e).as("expected the policy to be refused").isNotNull();
        return e.errors().stream().map(PolicyError::toString).toList();
    }

    @Test
    void absentMeansRedactWithEveryBuiltin() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\n", "p.yaml");
        assertThat(p.redaction().action()).isEqualTo(RedactionAction.REDACT);
        assertThat(p.redaction().builtinIds()).hasSize(BuiltinDetectors.all().size());
        assertThat(p.redaction().custom()).isEmpty();
        assertThat(PolicyLoader.embeddedDefault().redaction().detectors().detectors()).hasSize(BuiltinDetectors.all().size());
    }

    @Test
    void aReloadWithTheSameRedactionReusesItsCompiledDetectorsAndAChangedOneDoesNot() throws Exception {
        String section = """
                redaction:
                  custom:
                    - { id: corp-token, pattern: "corp_[A-Za-z0-9]{32}", keywords: [corp_] }
                """;
        Policy first = PolicyLoader.parse("version: 1\n" + section, "p.yaml");
        // another snapshot of the same redaction section (the rest of the policy changed)
        Policy again = PolicyLoader.parse("version: 1\nmode: report\n" + section, "p.yaml");
        assertThat(again.redaction().detectors()).isSameAs(first.redaction().detectors());

        Policy changed = PolicyLoader.parse("version: 1\n" + section.replace("{32}", "{40}"), "p.yaml");
        assertThat(changed.redaction().detectors()).isNotSameAs(first.redaction().detectors());
        String token32 = "corp_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz1Bc3Df";
        assertThat(redacted(first, "x " + token32 + " y")).isEqualTo("x [REDACTED:corp-token] y");
        assertThat(redacted(changed, "x " + token32 + " y")).isEqualTo("x " + token32 + " y");
        String token40 = token32 + "Gh7Jk9Mn";
        assertThat(redacted(changed, "x " + token40 + " y")).isEqualTo("x [REDACTED:corp-token] y");
    }

    private static String redacted(Policy p, String text) throws Exception {
        StreamingRedactor red = p.redaction().detectors().newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, 1 << 20);
        byte[] out = red.feed(text.getBytes(StandardCharsets.UTF_8));
        return new String(out, StandardCharsets.UTF_8) + new String(red.finish(), StandardCharsets.UTF_8);
    }

    @Test
    void fullSection() throws Exception {
        Policy p = PolicyLoader.parse("""
                version: 1
                redaction:
                  action: block
                  builtin: [aws-access-key-id, github-pat]
                  custom:
                    - { id: corp-token, pattern: "corp_[A-Za-z0-9]{32}", keywords: ["CORP_"] }
                    - id: ticket-secret
                      pattern: "TKS-[0-9]{12}"
                      keywords: [tks-]
                      max_length: 16
                """, "p.yaml");
        RedactionSettings r = p.redaction();
        assertThat(r.action()).isEqualTo(RedactionAction.BLOCK);
        assertThat(r.builtinIds()).containsExactly("aws-access-key-id", "github-pat");
        assertThat(r.custom()).extracting(Detector::id).containsExactly("corp-token", "ticket-secret");
        assertThat(r.custom().get(0).keywords()).containsExactly("corp_");
        assertThat(r.custom().get(1).maxLength()).isEqualTo(16);
        assertThat(r.detectors().detectors()).extracting(Detector::id)
                .containsExactly("aws-access-key-id", "github-pat", "corp-token", "ticket-secret");

        String token = "corp_" + "Ab3De5Gh7Jk9Mn2Pq4St6Vw8Yz1Bc3Df";
        StreamingRedactor red = r.detectors().newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, 1 << 20);
        byte[] out = red.feed(("x " + token + " y").getBytes(StandardCharsets.UTF_8));
        String all = new String(out, StandardCharsets.UTF_8) + new String(red.finish(), StandardCharsets.UTF_8);
        assertThat(all).isEqualTo("x [REDACTED:corp-token] y");
    }

    @Test
    void emptyBuiltinListAndNoCustomIsAllowed() throws Exception {
        Policy p = PolicyLoader.parse("version: 1\nredaction:\n  action: report\n  builtin: []\n", "p.yaml");
        assertThat(p.redaction().detectors().detectors()).isEmpty();
        assertThat(p.redaction().action()).isEqualTo(RedactionAction.REPORT);
    }

    @Test
    void errorsCarryTheirLocation() {
        assertThat(errors("""
                version: 1
                redaction:
                  action: shred
                  builtin: [aws-access-key-id, no-such-detector, aws-access-key-id]
                  custom:
                    - { id: corp-token, pattern: "corp_[A-Z", keywords: [corp_] }
                    - { id: github-pat, pattern: "x{3}", keywords: [] }
                    - { id: BadId, pattern: "y", keywords: ["a"], colour: red }
                    - { id: corp-token, pattern: "z{4}", keywords: [zz] }
                  extra: 1
                """)).containsExactly(
                "p.yaml:3:11: redaction.action: shred (expected: redact, block or report)",
                "p.yaml:4:32: redaction.builtin[1]: no-such-detector is not a built-in detector (expected one of: "
                        + String.join(", ", BuiltinDetectors.all().stream().map(Detector::id).toList()) + ")",
                "p.yaml:4:50: redaction.builtin[2]: aws-access-key-id listed twice",
                "p.yaml:6:34: redaction.custom[0].pattern: bad regular expression: Unclosed character class near index 8 (expected: java.util.regex syntax)",
                "p.yaml:7:13: redaction.custom[1].id: github-pat is the id of a built-in detector (expected: a new id)",
                "p.yaml:7:52: redaction.custom[1].keywords: empty (expected: a list of 1 or more strings found in every match)",
                "p.yaml:8:13: redaction.custom[2].id: BadId (expected: [a-z0-9][a-z0-9-]{0,63})",
                "p.yaml:8:45: redaction.custom[2].keywords[0]: a (expected: 2..64 printable ASCII characters without spaces, quotes or backslashes)",
                "p.yaml:8:51: redaction.custom[2].colour: unknown key (expected one of: id, pattern, keywords, max_length)",
                "p.yaml:9:13: redaction.custom[3].id: corp-token listed twice",
                "p.yaml:10:3: redaction.extra: unknown key (expected one of: action, binary, builtin, custom)");
    }

    @Test
    void builtinMustBeAllOrAList() {
        assertThat(errors("version: 1\nredaction: {builtin: some}\n"))
                .containsExactly("p.yaml:2:22: redaction.builtin: some (expected: all, or a list of detector ids)");
    }

    @Test
    void customNeedsIdPatternKeywords() {
        assertThat(errors("version: 1\nredaction:\n  custom:\n    - {}\n")).containsExactly(
                "p.yaml:4:7: redaction.custom[0].id: missing (expected: an id such as corp-token)",
                "p.yaml:4:7: redaction.custom[0].pattern: missing (expected: a Java regular expression)",
                "p.yaml:4:7: redaction.custom[0].keywords: missing (expected: a list of 1 or more strings found in every match)");
    }

    @Test
    void redactionSitsBesideInspectAndTls() throws Exception {
        Policy policy = PolicyLoader.parse("version: 1\ninspect: {api.test: {redact: true}}\ntls: {}\n"
                + "redaction: {action: block}\n", "p.yaml");
        assertThat(policy.inspected("api.test")).isPresent();
        assertThat(policy.redaction().action()).isEqualTo(dev.sluice.rules.redact.RedactionAction.BLOCK);
    }
}
