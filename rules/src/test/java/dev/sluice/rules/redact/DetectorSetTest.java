package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class DetectorSetTest {

    private static final List<Detector> SOME = List.of(BuiltinDetectors.byId("github-pat").orElseThrow(),
            BuiltinDetectors.byId("aws-access-key-id").orElseThrow());

    @Test
    void twoTapsAskedForInTurnAreEachBuiltOnce() {
        DetectorSet set = DetectorSet.of(SOME);
        List<TapKeyword> requestTap = List.of(new TapKeyword("{{", 16, 64));
        List<TapKeyword> responseTap = List.of(new TapKeyword("${", 16, 64));
        DetectorSet forRequests = set.withTap(requestTap);
        DetectorSet forResponses = set.withTap(responseTap);
        assertThat(forResponses).isNotSameAs(forRequests);
        assertThat(set.withTap(requestTap)).isSameAs(forRequests);
        assertThat(set.withTap(responseTap)).isSameAs(forResponses);
        assertThat(forRequests.tap()).isEqualTo(requestTap);
        assertThat(forResponses.tap()).isEqualTo(responseTap);
        assertThat(set.withTap(List.of())).isSameAs(set);
    }

    @Test
    void compiledReturnsTheSetBuiltForDetectorsThatScanAlike() {
        DetectorSet one = DetectorSet.compiled(SOME);
        assertThat(DetectorSet.compiled(List.copyOf(SOME))).isSameAs(one);
        // the same detectors in another order name overlapping matches differently: another set
        assertThat(DetectorSet.compiled(List.of(SOME.get(1), SOME.get(0)))).isNotSameAs(one);
        // a custom detector rebuilt from the same definition (a new Pattern object) scans alike
        Detector corp = Detector.custom("corp-token", java.util.regex.Pattern.compile("corp_[a-z0-9]{20}"),
                List.of("corp_"), 64);
        Detector corpAgain = Detector.custom("corp-token", java.util.regex.Pattern.compile("corp_[a-z0-9]{20}"),
                List.of("corp_"), 64);
        Detector corpOther = Detector.custom("corp-token", java.util.regex.Pattern.compile("corp_[a-z0-9]{24}"),
                List.of("corp_"), 64);
        DetectorSet withCorp = DetectorSet.compiled(List.of(SOME.get(0), corp));
        assertThat(DetectorSet.compiled(List.of(SOME.get(0), corpAgain))).isSameAs(withCorp);
        assertThat(DetectorSet.compiled(List.of(SOME.get(0), corpOther))).isNotSameAs(withCorp);
    }
}
