package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;

/**
 * The vendor prefixes that {@link KeywordPrefilter} looks for only inside long runs
 * ({@link LongRunKeywords}): the claim that no match exists outside such a run is checked against the
 * detectors' own patterns.
 */
class LongRunKeywordsTest {

    @Test
    void everyListedKeywordIsABuiltinKeywordOfRunCharactersScannedAsARunKeyword() {
        KeywordPrefilter scan = KeywordPrefilter.of(BuiltinDetectors.all(), false);
        for (Map.Entry<Detector, List<String>> e : LongRunKeywords.all().entrySet()) {
            assertThat(BuiltinDetectors.all()).as(e.getKey().id()).contains(e.getKey());
            for (String k : e.getValue()) {
                assertThat(e.getKey().keywords()).as(e.getKey().id()).contains(k);
                for (byte b : k.getBytes(StandardCharsets.US_ASCII)) {
                    assertThat(KeywordPrefilter.isRunChar(b)).as(k).isTrue();
                }
                assertThat(scan.isRunKeyword(scan.keywords().indexOf(k))).as(k).isTrue();
            }
        }
        // prose words stay ordinary keywords
        assertThat(scan.isRunKeyword(scan.keywords().indexOf("token"))).isFalse();
        assertThat(scan.isRunKeyword(scan.keywords().indexOf("akia"))).isFalse();
    }

    /** A tap keyword that is also a listed prefix is reported everywhere: the tap asked for every occurrence. */
    @Test
    void aTapKeywordIsNeverOnlyARunKeyword() {
        DetectorSet set = DetectorSet.builtins().withTap(List.of(new TapKeyword("ghp_", 0, 8)));
        KeywordPrefilter scan = set.prefilter();
        assertThat(scan.isRunKeyword(scan.keywords().indexOf("ghp_"))).isFalse();
        assertThat(scan.isRunKeyword(scan.keywords().indexOf("gho_"))).isTrue();
        byte[] text = "see ghp_ here".getBytes(StandardCharsets.US_ASCII);
        int[] hits = {0};
        scan.scan(text, 0, text.length, text.length, (k, end) -> hits[0] += scan.keywords().get(k).equals("ghp_") ? 1 : 0);
        assertThat(hits[0]).isEqualTo(1);
    }

    /**
     * For every positive example of a listed detector: each listed keyword of the secret sits in a run of
     * at least 24; and breaking the run with a space anywhere so that it gets shorter than that leaves no
     * match of the pattern over the keyword (so a pattern that accepted a shorter token would fail here).
     */
    @Test
    void noMatchHoldsAListedKeywordOutsideALongRun() {
        Set<String> checked = new HashSet<>();
        for (BuiltinDetectorsTest.Positive p : BuiltinDetectorsTest.positives()) {
            Detector d = BuiltinDetectors.byId(p.id()).orElseThrow();
            List<String> listed = LongRunKeywords.all().get(d);
            if (listed == null) {
                continue;
            }
            byte[] text = p.text().getBytes(StandardCharsets.ISO_8859_1);
            int secretAt = p.text().indexOf(p.secret());
            String lower = p.text().toLowerCase(Locale.ROOT);
            for (String k : listed) {
                for (int s = lower.indexOf(k, secretAt); s >= 0 && s < secretAt + p.secret().length(); s = lower.indexOf(k, s + 1)) {
                    int e = s + k.length();
                    if (e > secretAt + p.secret().length()) {
                        break;
                    }
                    assertThat(KeywordPrefilter.inRun(text, s, e, text.length)).as(p.toString()).isTrue();
                    checked.add(d.id() + " " + k);
                    for (int j = Math.max(0, s - KeywordPrefilter.RUN); j < Math.min(text.length, e + KeywordPrefilter.RUN); j++) {
                        if (j >= s && j < e) {
                            continue;
                        }
                        byte[] cut = text.clone();
                        cut[j] = ' ';
                        if (KeywordPrefilter.inRun(cut, s, e, cut.length)) {
                            continue;
                        }
                        Matcher m = d.pattern().matcher(new String(cut, StandardCharsets.ISO_8859_1));
                        while (m.find()) {
                            assertThat(m.start() <= s && m.end() >= e)
                                    .as("%s matches %s with a run shorter than 24 around %s", d.id(), m.group(), k)
                                    .isFalse();
                        }
                    }
                    break;
                }
            }
        }
        // most listed keywords have a positive example to check against
        assertThat(checked.size()).isGreaterThanOrEqualTo(40);
    }
}
