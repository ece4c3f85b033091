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
                    if (scalar.isRunKeyword(k) && runAround(text, i, i + kw.length(), limit) < KeywordPrefilter.RUN) {
                        continue; // a base64 stem outside a run of base64 characters
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

    /** Base64 characters of {@code text[s, e)} and at most {@value KeywordPrefilter#RUN} on each side, before {@code limit}. */
    private static int runAround(byte[] text, int s, int e, int limit) {
        int n = e - s;
        for (int i = s - 1; i >= Math.max(0, s - KeywordPrefilter.RUN) && EncodedDetectors.isBase64Char(text[i]); i--) {
            n++;
        }
        for (int i = e; i < Math.min(limit, e + KeywordPrefilter.RUN) && EncodedDetectors.isBase64Char(text[i]); i++) {
            n++;
        }
        return n;
    }

    /**
     * A base64 stem (a keyword of the base64 decoders) counts only inside a run of at least 24 base64
     * characters, anywhere in a long body and across the split of the start positions into two calls:
     * the vector scan finds such runs in a pass of its own and both scans agree.
     */
    @Test
    void base64StemsCountOnlyInsideLongRuns() {
        List<Detector> detectors = BuiltinDetectors.all();
        KeywordPrefilter vector = KeywordPrefilter.of(detectors, true);
        KeywordPrefilter scalar = KeywordPrefilter.of(detectors, false);
        String stem = EncodedDetectors.base64Stem("PASSWORD", 0); // UEFTU1dPUkQ
        int k = scalar.keywords().indexOf(stem.toLowerCase(Locale.ROOT));
        assertThat(k).isGreaterThanOrEqualTo(0);
        assertThat(scalar.isRunKeyword(k)).isTrue();
        assertThat(scalar.isRunKeyword(scalar.keywords().indexOf("password"))).isFalse();
        Random random = new Random(7);
        String b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int round = 0; round < 300; round++) {
            StringBuilder b = new StringBuilder();
            int at = random.nextInt(3000);
            while (b.length() < at) {
                b.append(random.nextInt(6) == 0 ? ' ' : (char) ('a' + random.nextInt(26)));
            }
            int before = random.nextInt(30);
            int after = random.nextInt(30);
            b.append(' ');
            for (int i = 0; i < before; i++) {
                b.append(b64.charAt(random.nextInt(64)));
            }
            int start = b.length();
            b.append(stem);
            for (int i = 0; i < after; i++) {
                b.append(b64.charAt(random.nextInt(64)));
            }
            b.append(" tail of the text, long enough for a vector step or two after the run.");
            byte[] text = b.toString().getBytes(StandardCharsets.ISO_8859_1);
            boolean expected = Math.min(before, KeywordPrefilter.RUN) + stem.length() + Math.min(after, KeywordPrefilter.RUN)
                    >= KeywordPrefilter.RUN;
            int split = random.nextInt(text.length);
            for (KeywordPrefilter p : List.of(vector, scalar)) {
                List<Integer> ends = new ArrayList<>();
                KeywordPrefilter.HitSink sink = (kw, end) -> {
                    if (kw == k) {
                        ends.add(end);
                    }
                };
                p.scan(text, 0, split, text.length, sink);
                p.scan(text, split, text.length, text.length, sink);
                assertThat(ends.contains(start + stem.length()))
                        .as("%s round %d: run of %d + %d + %d, split %d", p, round, before, stem.length(), after, split)
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
