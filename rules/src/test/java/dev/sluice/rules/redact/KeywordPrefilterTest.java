package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class KeywordPrefilterTest {

    static Detector detector(String id, String... keywords) {
        return new Detector(id, id, List.of(keywords), Pattern.compile("x"), 0, 0, null, 0, 10, false);
    }

    @Test
    void candidatesAreTheDetectorsWithAKeywordCaseInsensitively() {
        KeywordPrefilter p = KeywordPrefilter.of(List.of(detector("a", "akia", "asia"), detector("b", "ghp_"),
                detector("c", "password"), detector("d", "word")));
        byte[] text = "key AKIA... and a PassWord".getBytes(StandardCharsets.US_ASCII);
        assertThat(p.candidates(text, 0, text.length).stream().toArray()).containsExactly(0, 2, 3);
        assertThat(p.candidates(text, 0, 8).stream().toArray()).containsExactly(0);
        assertThat(p.candidates(new byte[0], 0, 0).isEmpty()).isTrue();
    }

    @Test
    void emptyDetectorListNeverReports() {
        KeywordPrefilter p = KeywordPrefilter.of(List.of());
        byte[] text = "anything".getBytes(StandardCharsets.US_ASCII);
        assertThat(p.candidates(text, 0, text.length).isEmpty()).isTrue();
    }

    /** The four-lane scan reports exactly what a naive search finds, for any length and start state. */
    @Test
    void agreesWithNaiveSearch() {
        List<Detector> detectors = BuiltinDetectors.all();
        KeywordPrefilter p = KeywordPrefilter.of(detectors);
        Random random = new Random(42);
        String alphabet = "abcdefghijklmnopqrstuvwxyzAKIASGHP_-.:/ ~=\"'0123456789";
        for (int round = 0; round < 200; round++) {
            int n = random.nextInt(3) == 0 ? random.nextInt(100) : 4096 + random.nextInt(20000);
            StringBuilder b = new StringBuilder(n);
            while (b.length() < n) {
                if (random.nextInt(40) == 0) {
                    b.append(p.keywords().get(random.nextInt(p.keywords().size())));
                } else {
                    b.append(alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            byte[] text = b.toString().getBytes(StandardCharsets.US_ASCII);
            String lower = b.toString().toLowerCase(Locale.ROOT);
            List<Long> expected = new ArrayList<>();
            for (int k = 0; k < p.keywords().size(); k++) {
                String kw = p.keywords().get(k);
                for (int i = lower.indexOf(kw); i >= 0; i = lower.indexOf(kw, i + 1)) {
                    expected.add(((long) (i + kw.length()) << 16) | k);
                }
            }
            List<Long> actual = new ArrayList<>();
            int split = text.length == 0 ? 0 : random.nextInt(text.length);
            int state = p.scan(text, 0, split, KeywordPrefilter.START_STATE, (k, end) -> actual.add(((long) end << 16) | k));
            p.scan(text, split, text.length, state, (k, end) -> actual.add(((long) end << 16) | k));
            expected.sort(null);
            actual.sort(null);
            assertThat(actual).as("round %d length %d split %d", round, n, split).isEqualTo(expected);
        }
    }
}
