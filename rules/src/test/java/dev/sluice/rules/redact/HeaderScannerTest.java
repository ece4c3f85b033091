package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.SigV4;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HeaderScannerTest {

    @Test
    void scansEveryHeaderButTheProviderAuthHeaders() {
        Fakes f = new Fakes(12);
        String ant = "sk-ant-" + "api03-" + f.of(Fakes.URLSAFE, 93) + "AA";
        String ghp = f.github("ghp_");
        HeaderScanner scanner = new HeaderScanner(DetectorSet.builtins(), HeaderScanner.PROVIDER_AUTH_HEADERS);
        HeaderScanner.Result r = scanner.scan(List.of(
                Map.entry("X-Api-Key", ant),
                Map.entry("Authorization", "Bearer " + ghp),
                Map.entry("Content-Type", "application/json"),
                Map.entry("X-Debug-Token", "token " + ghp),
                Map.entry("Cookie", "session=1; gh=" + ghp)));
        assertThat(r.findings()).isEqualTo(Map.of("github-pat", 2L));
        assertThat(r.hasFindings()).isTrue();
        assertThat(r.headers()).containsExactly(
                Map.entry("X-Api-Key", ant),
                Map.entry("Authorization", "Bearer " + ghp),
                Map.entry("Content-Type", "application/json"),
                Map.entry("X-Debug-Token", "token [REDACTED:github-pat]"),
                Map.entry("Cookie", "session=1; gh=[REDACTED:github-pat]"));
    }

    @Test
    void cleanHeadersComeBackUnchanged() {
        HeaderScanner scanner = new HeaderScanner(DetectorSet.builtins(), HeaderScanner.PROVIDER_AUTH_HEADERS);
        List<Map.Entry<String, String>> headers = List.of(Map.entry("Accept", "*/*"), Map.entry("User-Agent", "goose/1.0"));
        HeaderScanner.Result r = scanner.scan(headers);
        assertThat(r.headers()).isEqualTo(headers);
        assertThat(r.hasFindings()).isFalse();
    }

    @Test
    void sigV4Detection() {
        assertThat(SigV4.isSigned(List.of(Map.entry("authorization",
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc")), null))
                .isTrue();
        assertThat(SigV4.isSigned(List.of(Map.entry("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")), null)).isTrue();
        assertThat(SigV4.isSigned(List.of(), "X-Amz-Algorithm=AWS4-HMAC-SHA256&x-amz-signature=abc")).isTrue();
        assertThat(SigV4.isSigned(List.of(Map.entry("Authorization", "Bearer sk")), "a=b&X-Amz-Signaturex=1")).isFalse();
        assertThat(SigV4.plan(RedactionAction.REDACT, true)).isEqualTo(new SigV4.Plan(RedactionAction.BLOCK, Reason.SIGNED_BODY));
        assertThat(SigV4.plan(RedactionAction.REPORT, true)).isEqualTo(new SigV4.Plan(RedactionAction.REPORT, Reason.CREDENTIAL_DETECTED));
        assertThat(SigV4.plan(RedactionAction.BLOCK, true)).isEqualTo(new SigV4.Plan(RedactionAction.BLOCK, Reason.CREDENTIAL_DETECTED));
        assertThat(SigV4.plan(RedactionAction.REDACT, false)).isEqualTo(new SigV4.Plan(RedactionAction.REDACT, Reason.CREDENTIAL_DETECTED));
    }

    @org.junit.jupiter.api.Test
    void aRequestTargetIsScannedExceptTheProvidersOwnAuthParameters() {
        HeaderScanner scanner = new HeaderScanner(DetectorSet.builtins(), java.util.Set.of());
        String pat = "ghp_" + "1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU";
        String google = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY";
        String akid = "AKIA" + "IOSFODNN7QWERTYU";
        HeaderScanner.TargetResult r = scanner.scanTarget("/repos/" + pat + "/x?token=" + pat + "&key=" + google
                + "&X-Amz-Credential=" + akid + "%2F20261202%2Fus-east-1%2Fs3%2Faws4_request&flag");
        org.assertj.core.api.Assertions.assertThat(r.target()).isEqualTo("/repos/%5BREDACTED%3Agithub-pat%5D/x?token="
                + "%5BREDACTED%3Agithub-pat%5D&key=" + google + "&X-Amz-Credential=" + akid
                + "%2F20261202%2Fus-east-1%2Fs3%2Faws4_request&flag");
        org.assertj.core.api.Assertions.assertThat(r.findings()).containsExactly(java.util.Map.entry("github-pat", 2L));
        org.assertj.core.api.Assertions.assertThat(scanner.scanTarget("/v1/models?key=" + google).hasFindings()).isFalse();
        org.assertj.core.api.Assertions.assertThat(scanner.scanTarget("/v1/chat?" + google).target())
                .as("a bare value is no provider parameter").doesNotContain(google);
    }
}
