package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.Fakes.ALNUM;
import static dev.sluice.rules.redact.Fakes.DIGITS;
import static dev.sluice.rules.redact.Fakes.HEX;
import static dev.sluice.rules.redact.Fakes.LOWER;
import static dev.sluice.rules.redact.Fakes.UPPER;
import static dev.sluice.rules.redact.JsonModeDifferentialTest.WHOLE;
import static dev.sluice.rules.redact.JsonModeDifferentialTest.javaString;
import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.redact.JsonModeDifferentialTest.Case;
import dev.sluice.rules.redact.JsonModeDifferentialTest.Gen;
import dev.sluice.rules.redact.JsonModeDifferentialTest.Outcome;
import dev.sluice.rules.redact.JsonModeDifferentialTest.Secret;
import dev.sluice.rules.redact.JsonModeDifferentialTest.Wrapper;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Property test of the three {@link RedactionAction}s and of custom detectors, on the cases of
 * {@link JsonModeDifferentialTest} (same generator, fixed seeds), in PLAIN mode (the decoded text) and in
 * JSON mode (the raw body), for the whole body and random chunk splits (one byte per chunk for small
 * bodies), fed as byte arrays and as byte buffers:
 * <ol>
 *   <li>REPORT: each chunk's output is exactly the chunk, {@code finish()} returns nothing, and the
 *       findings equal REDACT's for the same body;</li>
 *   <li>BLOCK: {@code blocked()} is true at the end exactly when REDACT found something; the output is a
 *       prefix of REDACT's output ending at or before its first {@code [REDACTED:} marker, nothing is
 *       returned once blocked, no secret REDACT removed is in it (JSON: after undoing escapes), and with no
 *       findings it is the body; REDACT's own output and findings do not depend on the split;</li>
 *   <li>custom detectors ({@link Detector#custom}, 1 to 3 of {@link #CUSTOM} added to the built-ins):
 *       strings they match are put into the texts, and their keywords are written with {@code \}{@code
 *       u00XX} (or {@code \/}) escapes in some cases; JSON mode must agree with PLAIN mode as in
 *       {@link JsonModeDifferentialTest#check}; the action checks above run on these cases too.</li>
 * </ol>
 * Each case is rebuilt from its seed: {@code actionCase(seed)} or {@code customCase(seed)}.
 */
class RedactionActionsPropertyTest {

    static final DetectorSet ALL = JsonModeDifferentialTest.ALL;
    static final byte[] MARKER = "[REDACTED:".getBytes(StandardCharsets.US_ASCII);

    /**
     * Cases per seed of each property (three seeds each): fixed numbers, so coverage does not depend on
     * the machine's speed; {@code -Dsluice.property.scale=N} multiplies them for a long run.
     */
    static final int ACTION_CASES_PER_SEED = 60 * Integer.getInteger("sluice.property.scale", 1);
    static final int CUSTOM_CASES_PER_SEED = 40 * Integer.getInteger("sluice.property.scale", 1);
    /** Bodies up to this size are also fed one byte per chunk. */
    static final int ONE_BYTE_CHUNKS_UP_TO = 1500;

    // ------------------------------------------------------------------ custom detectors

    static final String KEYWORD_64 = "sluice-custom-keyword-0123456789abcdefghijklmnopqrstuvwxyz.:;!=+";

    /** The custom detectors a case picks from; each has a maker of matching strings in {@link #customValue}. */
    static final List<Detector> CUSTOM = List.of(
            Detector.custom("custom-zq", Pattern.compile("zq-[A-Za-z0-9]{10,30}"), List.of("zq-"), 40),
            Detector.custom("custom-tok", Pattern.compile("[a-z]{3,8}-tok-[0-9]{6}"), List.of("-tok-"), 24),
            Detector.custom("acme-key", Pattern.compile("(?i)acme_(?:live|test)_[a-f0-9]{32}"),
                    List.of("acme_live_", "acme_test_"), 50),
            Detector.custom("vault-ref", Pattern.compile("\\{\\{vault:[a-z0-9/]{8,40}\\}\\}"), List.of("{{vault:"), 60),
            Detector.custom("corp-cred", Pattern.compile("corp-internal-credential-v2=[A-Za-z0-9]{20}"),
                    List.of("corp-internal-credential-v2="), 60),
            Detector.custom("spaced-token", Pattern.compile("my token [0-9a-f]{24}"), List.of("my token "), 40),
            Detector.custom("pin-code", Pattern.compile("[0-9]{4}\\.pin\\.[0-9]{4}"), List.of(".pin."), 20),
            Detector.custom("q9-code", Pattern.compile("q9[A-Z]{12}"), List.of("q9"), 20),
            Detector.custom("long-keyword", Pattern.compile(Pattern.quote(KEYWORD_64) + "[A-Z0-9]{8}"), List.of(KEYWORD_64),
                    80));

    /** A string that detector {@code CUSTOM.get(i)} matches whole. */
    static String customValue(int i, Random r, Fakes f) {
        return switch (i) {
            case 0 -> "zq-" + f.of(ALNUM, 10 + r.nextInt(21));
            case 1 -> f.of(LOWER, 3 + r.nextInt(6)) + "-tok-" + f.of(DIGITS, 6);
            case 2 -> randomCase(r, Gen.pick(r, "acme_live_", "acme_test_")) + f.of(HEX, 32);
            case 3 -> "{{vault:" + f.of(LOWER + DIGITS, 3 + r.nextInt(10)) + "/" + f.of(LOWER + DIGITS + "/", 4 + r.nextInt(20))
                    + f.of(LOWER, 1) + "}}";
            case 4 -> "corp-internal-credential-v2=" + f.of(ALNUM, 20);
            case 5 -> "my token " + f.of(HEX, 24);
            case 6 -> f.of(DIGITS, 4) + ".pin." + f.of(DIGITS, 4);
            case 7 -> "q9" + f.of(UPPER, 12);
            default -> KEYWORD_64 + f.of(UPPER + DIGITS, 8);
        };
    }

    /** A near miss of detector {@code i}: its keyword without a match. */
    static String customDecoy(int i, Random r, Fakes f) {
        return switch (i) {
            case 0 -> "zq-" + f.of(ALNUM, 1 + r.nextInt(9)) + " ";
            case 1 -> f.of(LOWER, 2) + "-tok-" + f.of(DIGITS, 5) + " ";
            case 2 -> "acme_live_" + f.of(HEX, 31) + " ";
            case 3 -> "{{vault:" + f.of(LOWER, 5) + "}}";
            case 4 -> "corp-internal-credential-v2=" + f.of(ALNUM, 19) + " ";
            case 5 -> "my token " + f.of(HEX, 23) + " ";
            case 6 -> f.of(DIGITS, 3) + ".pin." + f.of(DIGITS, 4) + " ";
            case 7 -> "q9" + f.of(UPPER, 11) + " ";
            default -> KEYWORD_64.substring(0, 63) + " ";
        };
    }

    static String randomCase(Random r, String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            b.append(r.nextBoolean() ? Character.toUpperCase(c) : c);
        }
        return b.toString();
    }

    private static final Map<Integer, DetectorSet> SETS = new HashMap<>();

    /** The built-ins followed by the custom detectors of bit mask {@code mask}, in {@link #CUSTOM} order. */
    static synchronized DetectorSet withCustom(int mask) {
        return SETS.computeIfAbsent(mask, m -> {
            List<Detector> ds = new ArrayList<>(BuiltinDetectors.all());
            for (int i = 0; i < CUSTOM.size(); i++) {
                if ((m & (1 << i)) != 0) {
                    ds.add(CUSTOM.get(i));
                }
            }
            return DetectorSet.of(ds);
        });
    }

    // ------------------------------------------------------------------ the properties

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3})
    void reportAndBlockAgreeWithRedact(long seed) throws Exception {
        runSeed("actions", seed, ACTION_CASES_PER_SEED, RedactionActionsPropertyTest::actionCase);
    }

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3})
    void customDetectorsInJsonModeMatchPlainMode(long seed) throws Exception {
        runSeed("custom", seed, CUSTOM_CASES_PER_SEED, RedactionActionsPropertyTest::customCase);
    }

    interface CaseCheck {
        /** Builds and checks the case of {@code caseSeed}; returns null or what failed. */
        String run(long caseSeed) throws Exception;
    }

    static void runSeed(String name, long seed, int cases, CaseCheck check) throws Exception {
        long started = System.nanoTime();
        List<String> failures = new ArrayList<>();
        int ran = 0;
        for (int i = 0; i < cases; i++) {
            long caseSeed = seed * 1_000_003L + i;
            String failure = check.run(caseSeed);
            ran++;
            if (failure != null) {
                failures.add("case seed " + caseSeed + " (seed " + seed + ", index " + i + "): " + failure);
                if (failures.size() >= 3) {
                    break;
                }
            }
        }
        System.out.printf("%s seed %d: %d cases in %d ms%n", name, seed, ran, (System.nanoTime() - started) / 1_000_000);
        assertThat(failures).as("failures").isEmpty();
        assertThat(ran).as("cases run").isGreaterThanOrEqualTo(30);
    }

    /** Properties 1 and 2 on a case of {@link JsonModeDifferentialTest}, in both modes. */
    static String actionCase(long caseSeed) throws Exception {
        Case c = Case.generate(caseSeed);
        return actionsBothModes(ALL, c.text, c.body(), c.secrets, c.splits, new Random(caseSeed ^ 0x5DEECE66DL),
                "\n  style: " + c.style);
    }

    static String actionsBothModes(DetectorSet set, String text, String body, List<Secret> secrets, List<int[]> jsonSplits,
                                   Random r, String where) throws Exception {
        byte[] decoded = text.getBytes(StandardCharsets.UTF_8);
        byte[] raw = body.getBytes(StandardCharsets.UTF_8);
        String failure = checkActions(set, BodyFormat.PLAIN, decoded, splitsFor(r, decoded.length, Gen.splits(r, decoded.length)),
                secrets);
        if (failure != null) {
            return "PLAIN " + failure + where + "\n  text: " + javaString(text);
        }
        failure = checkActions(set, BodyFormat.JSON, raw, splitsFor(r, raw.length, jsonSplits), secrets);
        if (failure != null) {
            return "JSON " + failure + where + "\n  body: " + javaString(body);
        }
        return null;
    }

    /** The whole body, the given splits and, for a small body, one byte per chunk. */
    static List<int[]> splitsFor(Random r, int len, List<int[]> splits) {
        List<int[]> all = new ArrayList<>();
        all.add(WHOLE);
        all.addAll(splits);
        if (len > 1 && len <= ONE_BYTE_CHUNKS_UP_TO) {
            int[] ones = new int[len - 1];
            for (int i = 0; i < ones.length; i++) {
                ones[i] = i + 1;
            }
            all.add(ones);
        }
        return all;
    }

    /** What a redactor returned, chunk by chunk. */
    record Trace(byte[] output, Map<String, Long> findings, boolean blocked, String error) {
    }

    /**
     * Feeds {@code body} cut at {@code cuts}; for REPORT checks that each chunk comes back unchanged, for
     * BLOCK that nothing comes back once blocked (the first violation is {@link Trace#error}).
     */
    static Trace trace(DetectorSet set, BodyFormat format, RedactionAction action, byte[] body, int[] cuts, boolean buffers)
            throws BodyTooLargeException {
        StreamingRedactor r = set.newRedactor(format, action, Long.MAX_VALUE);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String error = null;
        int from = 0;
        for (int i = 0; i <= cuts.length; i++) {
            int to = i < cuts.length ? cuts[i] : body.length;
            boolean wasBlocked = r.blocked();
            byte[] got;
            if (buffers) {
                ByteBuffer b = ByteBuffer.wrap(body, from, to - from);
                got = r.feed(b);
                if (b.hasRemaining() && error == null) {
                    error = "feed(ByteBuffer) left " + b.remaining() + " bytes";
                }
            } else {
                got = r.feed(body, from, to - from);
            }
            if (error == null && action == RedactionAction.REPORT && !Arrays.equals(got, 0, got.length, body, from, to)) {
                error = "chunk [" + from + ", " + to + ") came back as " + javaString(utf8(got));
            }
            if (error == null && wasBlocked && got.length > 0) {
                error = "chunk [" + from + ", " + to + ") released " + javaString(utf8(got)) + " after blocked()";
            }
            out.writeBytes(got);
            from = to;
        }
        boolean wasBlocked = r.blocked();
        byte[] last = r.finish();
        if (error == null && action == RedactionAction.REPORT && last.length > 0) {
            error = "finish() returned " + javaString(utf8(last));
        }
        if (error == null && wasBlocked && last.length > 0) {
            error = "finish() released " + javaString(utf8(last)) + " after blocked()";
        }
        out.writeBytes(last);
        return new Trace(out.toByteArray(), r.findings(), r.blocked(), error);
    }

    /** Properties 1 and 2 for one mode; returns null or what failed. */
    static String checkActions(DetectorSet set, BodyFormat format, byte[] body, List<int[]> splits, List<Secret> secrets)
            throws Exception {
        Outcome redact = JsonModeDifferentialTest.redact(set, format, RedactionAction.REDACT, body, WHOLE, false);
        boolean found = !redact.findings().isEmpty();
        int marker = indexOf(redact.output(), MARKER);
        String redactedText = decode(format, redact.output());
        String bodyText = decode(format, body);
        List<String> removed = new ArrayList<>();
        for (Secret s : secrets) {
            if (bodyText.contains(s.secret()) && !redactedText.contains(s.secret())) {
                removed.add(s.secret());
            }
        }
        String redactInfo = "\n  REDACT findings: " + redact.findings() + "\n  REDACT output: " + javaString(redact.text());
        for (int n = 0; n < splits.size(); n++) {
            int[] cuts = splits.get(n);
            boolean buffers = n % 2 == 1;
            String how = "\n  cuts: " + JsonModeDifferentialTest.describeCuts(cuts) + (buffers ? " (ByteBuffer)" : "");
            if (n > 0) {
                Outcome split = JsonModeDifferentialTest.redact(set, format, RedactionAction.REDACT, body, cuts, buffers);
                if (!split.findings().equals(redact.findings()) || !Arrays.equals(split.output(), redact.output())) {
                    return "REDACT split differs from whole body: findings " + split.findings() + how
                            + "\n  split output: " + javaString(split.text()) + redactInfo;
                }
            }
            // 1. REPORT
            Trace report = trace(set, format, RedactionAction.REPORT, body, cuts, buffers);
            if (report.error() != null) {
                return "REPORT: " + report.error() + how;
            }
            if (!Arrays.equals(report.output(), body)) {
                return "REPORT output differs from the body" + how + "\n  REPORT output: " + javaString(utf8(report.output()));
            }
            if (!report.findings().equals(redact.findings())) {
                return "REPORT findings " + report.findings() + " differ from REDACT's" + how + redactInfo;
            }
            if (report.blocked()) {
                return "REPORT: blocked() is true" + how;
            }
            // 2. BLOCK
            Trace block = trace(set, format, RedactionAction.BLOCK, body, cuts, buffers);
            String blockInfo = "\n  BLOCK output: " + javaString(utf8(block.output())) + "\n  BLOCK findings: " + block.findings();
            if (block.error() != null) {
                return "BLOCK: " + block.error() + how + blockInfo + redactInfo;
            }
            if (block.blocked() != found) {
                return "BLOCK: blocked() is " + block.blocked() + how + blockInfo + redactInfo;
            }
            if (!found) {
                if (!Arrays.equals(block.output(), body)) {
                    return "BLOCK without findings: output differs from the body" + how + blockInfo;
                }
                continue;
            }
            byte[] b = block.output();
            if (b.length > marker || !Arrays.equals(b, 0, b.length, redact.output(), 0, b.length)) {
                return "BLOCK output is not a prefix of REDACT's output before its first marker (at " + marker + ")" + how
                        + blockInfo + redactInfo;
            }
            String blockText = decode(format, b);
            for (String s : removed) {
                if (blockText.contains(s)) {
                    return "BLOCK output holds a secret: " + javaString(s) + how + blockInfo + redactInfo;
                }
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ property 3: custom detectors

    /**
     * A text of {@link Gen#text} with strings matching 1 to 3 custom detectors (and near misses) put between
     * pieces of it, written as a JSON string in one of the styles of {@link Gen#encode}, then with some
     * literal occurrences of the custom keywords partly rewritten as {@code \}{@code u00XX} escapes.
     */
    static String customCase(long caseSeed) throws Exception {
        Random r = new Random(caseSeed);
        Fakes f = new Fakes(r.nextLong());
        int mask = 0;
        int k = 1 + r.nextInt(3);
        while (Integer.bitCount(mask) < k) {
            mask |= 1 << r.nextInt(CUSTOM.size());
        }
        List<Integer> picked = new ArrayList<>();
        for (int i = 0; i < CUSTOM.size(); i++) {
            if ((mask & (1 << i)) != 0) {
                picked.add(i);
            }
        }
        DetectorSet set = withCustom(mask);
        List<Secret> secrets = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        int pieces = 1 + r.nextInt(4);
        for (int p = 0; p < pieces; p++) {
            if (r.nextInt(3) != 0) {
                // a short text of the differential test's generator (big ones only now and then)
                List<Secret> s = new ArrayList<>();
                String t = r.nextInt(8) == 0 ? Gen.text(r, f, s) : shortText(r, f, s);
                text.append(t);
                secrets.addAll(s);
            }
            int n = 1 + r.nextInt(3);
            for (int j = 0; j < n; j++) {
                int d = picked.get(r.nextInt(picked.size()));
                text.append(Gen.pick(r, BEFORE_CUSTOM));
                if (r.nextInt(5) == 0) {
                    text.append(customDecoy(d, r, f));
                } else {
                    String v = customValue(d, r, f);
                    secrets.add(new Secret(CUSTOM.get(d).id(), v));
                    text.append(v);
                }
                text.append(Gen.pick(r, Gen.SEPARATORS_AFTER_ANY));
            }
        }
        String[] style = new String[1];
        String js = Gen.encode(text.toString(), r, style);
        if (r.nextInt(3) != 0) {
            List<String> keywords = new ArrayList<>();
            for (int d : picked) {
                keywords.addAll(CUSTOM.get(d).keywords());
            }
            long escSeed = r.nextLong();
            js = escapeKeywordCharacters(js, keywords, escSeed);
            style[0] += " + escapeKeywordCharacters(" + escSeed + "L)";
        }
        Wrapper w = JsonModeDifferentialTest.WRAPPERS.get(r.nextInt(JsonModeDifferentialTest.WRAPPERS.size()));
        String body = w.prefix() + js + w.suffix();
        int len = body.getBytes(StandardCharsets.UTF_8).length;
        List<int[]> splits = Gen.splits(r, len);
        String where = "\n  custom: " + picked.stream().map(i -> CUSTOM.get(i).id()).toList();
        String failure = JsonModeDifferentialTest.check(set, text.toString(), secrets, body, w.pointer(), splits, style[0]);
        if (failure != null) {
            return failure + where;
        }
        if (r.nextInt(3) == 0) {
            return actionsBothModes(set, text.toString(), body, secrets, splits, r, where + "\n  style: " + style[0]);
        }
        return null;
    }

    /** Before a custom string: separators that end any value before them (a generic secret's too). */
    static final String[] BEFORE_CUSTOM = {" ", "\n", "\t", "\" ", "'", ", ", ")", ">", "\n\n"};

    /** A text of {@link Gen#text} of at most a few fragments. */
    static String shortText(Random r, Fakes f, List<Secret> secrets) {
        while (true) {
            List<Secret> s = new ArrayList<>();
            String t = Gen.text(r, f, s);
            if (t.length() < 2000) {
                secrets.addAll(s);
                return t;
            }
        }
    }

    /**
     * Rewrites characters of literal occurrences of {@code keywords} (ASCII case folded) in the JSON string
     * literal {@code js} as {@code \}{@code u00XX} escapes (random hex case) or, for a slash, {@code \/}: at
     * least one character of each occurrence rewritten, sometimes all.
     */
    static String escapeKeywordCharacters(String js, List<String> keywords, long seed) {
        Random r = new Random(seed);
        // literal characters of the literal: start index of each token, and whether it is an escape
        List<Integer> starts = new ArrayList<>();
        List<Boolean> esc = new ArrayList<>();
        for (int i = 0; i < js.length(); ) {
            starts.add(i);
            if (js.charAt(i) == '\\' && i + 1 < js.length()) {
                esc.add(true);
                i += js.charAt(i + 1) == 'u' ? 6 : 2;
            } else {
                esc.add(false);
                i++;
            }
        }
        boolean[] rewrite = new boolean[starts.size()];
        for (int t = 0; t < starts.size(); t++) {
            for (String kw : keywords) {
                if (t + kw.length() > starts.size()) {
                    continue;
                }
                boolean match = true;
                for (int c = 0; c < kw.length() && match; c++) {
                    int at = starts.get(t + c);
                    match = !esc.get(t + c) && Character.toLowerCase(js.charAt(at)) == kw.charAt(c)
                            && js.charAt(at) < 0x80;
                }
                if (match && r.nextInt(4) != 0) {
                    boolean all = r.nextInt(4) == 0;
                    rewrite[t + r.nextInt(kw.length())] = true;
                    for (int c = 0; c < kw.length(); c++) {
                        if (all || r.nextInt(3) == 0) {
                            rewrite[t + c] = true;
                        }
                    }
                }
            }
        }
        StringBuilder b = new StringBuilder(js.length() + 64);
        for (int t = 0; t < starts.size(); t++) {
            int from = starts.get(t);
            int to = t + 1 < starts.size() ? starts.get(t + 1) : js.length();
            if (rewrite[t] && !esc.get(t)) {
                char c = js.charAt(from);
                b.append(c == '/' && r.nextBoolean() ? "\\/" : Gen.u(c, r));
            } else {
                b.append(js, from, to);
            }
        }
        return b.toString();
    }

    // ------------------------------------------------------------------ helpers

    static String utf8(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    /**
     * The text of {@code b}: its UTF-8 decoding, with JSON escapes undone anywhere for JSON (leniently: an
     * escape JSON does not define, or one cut at the end, stays as it is).
     */
    static String decode(BodyFormat format, byte[] b) {
        String s = utf8(b);
        if (format != BodyFormat.JSON) {
            return s;
        }
        StringBuilder t = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 >= s.length()) {
                t.append(c);
                continue;
            }
            char e = s.charAt(i + 1);
            switch (e) {
                case '"', '\\', '/' -> t.append(e);
                case 'b' -> t.append('\b');
                case 'f' -> t.append('\f');
                case 'n' -> t.append('\n');
                case 'r' -> t.append('\r');
                case 't' -> t.append('\t');
                case 'u' -> {
                    if (i + 6 <= s.length() && s.substring(i + 2, i + 6).matches("[0-9A-Fa-f]{4}")) {
                        t.append((char) Integer.parseInt(s.substring(i + 2, i + 6), 16));
                        i += 4;
                    } else {
                        t.append('\\');
                        i--;
                    }
                }
                default -> {
                    t.append('\\');
                    i--;
                }
            }
            i++;
        }
        return t.toString();
    }

    static int indexOf(byte[] a, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= a.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (a[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return a.length;
    }

    // ------------------------------------------------------------------ sanity of the harness

    @Test
    void harnessSeesEachCustomDetectorInBothModes() throws Exception {
        Random r = new Random(5);
        Fakes f = new Fakes(5);
        for (int i = 0; i < CUSTOM.size(); i++) {
            DetectorSet set = withCustom(1 << i);
            String v = customValue(i, r, f);
            String text = "x " + v + " y";
            String js = Fakes.jsonString(text, true, false);
            for (long seed = 7; !js.contains("\\u00") && seed < 100; seed++) {
                js = escapeKeywordCharacters(Fakes.jsonString(text, true, false), CUSTOM.get(i).keywords(), seed);
            }
            assertThat(js).contains("\\u00");
            String body = "{\"a\":" + js + "}";
            assertThat(JsonModeDifferentialTest.MAPPER.readTree(body).get("a").asText()).isEqualTo(text);
            String failure = JsonModeDifferentialTest.check(set, text, List.of(new Secret(CUSTOM.get(i).id(), v)), body, "/a",
                    Gen.splits(new Random(i), body.length()), "test");
            assertThat(failure).isNull();
            assertThat(Fakes.run(set, BodyFormat.PLAIN, RedactionAction.REDACT, text).output())
                    .isEqualTo("x [REDACTED:" + CUSTOM.get(i).id() + "] y");
            assertThat(actionsBothModes(set, text, body, List.of(new Secret(CUSTOM.get(i).id(), v)), List.of(), r, ""))
                    .isNull();
        }
    }
}
