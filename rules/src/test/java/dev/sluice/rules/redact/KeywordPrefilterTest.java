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

    /**
     * Both scans (vector and scalar automaton, one and four lanes) report exactly what a naive search
     * finds, for any length, any split of the start positions into two calls, and any limit — with
     * keyword bytes after the limit that must not count.
     */
    @Test
    void agreesWithNaiveSearch() {
        List<Detector> detectors = BuiltinDetectors.all();
        KeywordPrefilter vector = KeywordPrefilter.of(detectors, true);
        KeywordPrefilter scalar = KeywordPrefilter.of(detectors, false);
        assertThat(scalar.vectorized()).isFalse();
        Random random = new Random(42);
        String alphabet = "abcdefghijklmnopqrstuvwxyzAKIASGHP_-.:/ ~=\"'0123456789\u00e9\u00ff@[`{";
        for (int round = 0; round < 400; round++) {
            int n = random.nextInt(3) == 0 ? random.nextInt(100) : 4096 + random.nextInt(20000);
            StringBuilder b = new StringBuilder(n);
            while (b.length() < n) {
                if (random.nextInt(40) == 0) {
                    String kw = scalar.keywords().get(random.nextInt(scalar.keywords().size()));
                    b.append(random.nextBoolean() ? kw.toUpperCase(Locale.ROOT) : kw);
                } else {
                    b.append(alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            byte[] text = b.toString().getBytes(StandardCharsets.ISO_8859_1);
            int limit = random.nextBoolean() ? text.length : random.nextInt(text.length + 1);
            String lower = new String(text, 0, limit, StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT);
            List<Long> expected = new ArrayList<>();
            for (int k = 0; k < scalar.keywords().size(); k++) {
                String kw = scalar.keywords().get(k);
                for (int i = lower.indexOf(kw); i >= 0; i = lower.indexOf(kw, i + 1)) {
                    if (!kw.equals(new String(text, i, kw.length(), StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT))) {
                        continue; // toLowerCase folded a non-ASCII letter
                    }
                    expected.add(((long) (i + kw.length()) << 16) | k);
                }
            }
            expected.sort(null);
            int split = limit == 0 ? 0 : random.nextInt(limit);
            for (KeywordPrefilter p : List.of(vector, scalar)) {
                List<Long> actual = new ArrayList<>();
                p.scan(text, 0, split, limit, (k, end) -> actual.add(((long) end << 16) | k));
                p.scan(text, split, limit, limit, (k, end) -> actual.add(((long) end << 16) | k));
                actual.sort(null);
                assertThat(actual).as("%s round %d length %d limit %d split %d", p, round, n, limit, split)
                        .isEqualTo(expected);
            }
        }
    }

    /**
     * The tests run with {@code --add-modules jdk.incubator.vector}, as {@code ./sluice} does, so the
     * default choice is the vector scan wherever the CPU has 256-bit vectors, unless
     * {@code sluice.redact.scalar} is set.
     */
    @Test
    void defaultIsTheVectorScanWhereTheCpuAllowsIt() {
        assertThat(ModuleLayer.boot().findModule("jdk.incubator.vector")).isPresent();
        assertThat(KeywordPrefilter.of(BuiltinDetectors.all()).vectorized())
                .isEqualTo(jdk.incubator.vector.ByteVector.SPECIES_PREFERRED.vectorBitSize() >= 256
                        && !Boolean.getBoolean("sluice.redact.scalar"));
    }
}
