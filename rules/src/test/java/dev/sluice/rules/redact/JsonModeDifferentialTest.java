package dev.sluice.rules.redact;

import static dev.sluice.rules.redact.Fakes.ALNUM;
import static dev.sluice.rules.redact.Fakes.B64;
import static dev.sluice.rules.redact.Fakes.BASE32;
import static dev.sluice.rules.redact.Fakes.DIGITS;
import static dev.sluice.rules.redact.Fakes.HEX;
import static dev.sluice.rules.redact.Fakes.LOWER;
import static dev.sluice.rules.redact.Fakes.UPPER;
import static dev.sluice.rules.redact.Fakes.URLSAFE;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Differential property test of {@link BodyFormat#JSON}: a text holding fake credentials, written as one
 * JSON string value (escaped in many styles) inside a small JSON document, must be redacted in JSON mode
 * exactly as PLAIN mode redacts the decoded text (the Java string's UTF-8 bytes):
 * <ol type="a">
 *   <li>the same findings (detector id → count), for the whole body and for random chunk splits of it
 *       (down to one byte per chunk for small bodies), and the same output for every split;</li>
 *   <li>the JSON-mode output parses, its other values are unchanged and the string value equals the
 *       PLAIN-mode output;</li>
 *   <li>no fake credential's secret survives in the decoded output.</li>
 * </ol>
 * Every case is built from its own seed ({@code seed * 1_000_003 + index}), so a failure message names
 * everything needed to rebuild it ({@code Case.generate(seed).check()}).
 *
 * <p>What the generator leaves out on purpose, being documented behaviour rather than a difference to
 * report:
 * <ul>
 *   <li>more than one string holding text: a match across string boundaries keeps its quotes and
 *       punctuation-only pieces (class comment of {@link StreamingRedactor}); wrapper keys and values hold
 *       no keyword;</li>
 *   <li>lone surrogates: a Java string encodes them as {@code ?} while JSON decoding gives U+FFFD, so the
 *       decoded text would differ by construction;</li>
 *   <li>a credential right after a letter (such as the {@code n} of a literal backslash-n): detectors
 *       that need a word start skip it by design, so that separator only follows credentials;</li>
 *   <li>after a generic secret, only separators that end its value: the value takes any non-ASCII byte,
 *       and a placeholder word joined to it (such as {@code passwords}) makes the validator reject it.</li>
 * </ul>
 * Failures found by this test and reduced by hand are the {@code repro*} tests at the end; all nine are
 * fixed and stay as regression tests.
 *
 * <p>To run it with the scalar keyword scan, set {@code JAVA_TOOL_OPTIONS=-Dsluice.redact.scalar=true}:
 * {@code -DargLine=...} on the Maven command line does not reach the tests, as the surefire configuration
 * sets {@code argLine} itself. The printed lines say which scan ran.
 */
class JsonModeDifferentialTest {

    static final DetectorSet ALL = DetectorSet.builtins();
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final ObjectMapper MAPPER_ASCII = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

    /**
     * Cases per seed (five seeds): a fixed number, so coverage does not depend on the machine's speed.
     * {@code -Dsluice.property.scale=N} multiplies it for a long run.
     */
    static final int CASES_PER_SEED = 150 * Integer.getInteger("sluice.property.scale", 1);

    // ------------------------------------------------------------------ the property

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1, 2, 3, 4, 5})
    void jsonModeMatchesPlainModeOnTheDecodedText(long seed) throws Exception {
        long started = System.nanoTime();
        List<String> failures = new ArrayList<>();
        int ran = 0;
        for (int i = 0; i < CASES_PER_SEED; i++) {
            long caseSeed = seed * 1_000_003L + i;
            Case c = Case.generate(caseSeed);
            String failure = c.check();
            ran++;
            if (failure != null) {
                failures.add("case seed " + caseSeed + " (seed " + seed + ", index " + i + "): " + failure);
                if (failures.size() >= 3) {
                    break;
                }
            }
        }
        System.out.printf("seed %d (%s keyword scan): %d cases in %d ms%n", seed,
                ALL.prefilter().vectorized() ? "vector" : "scalar", ran, (System.nanoTime() - started) / 1_000_000);
        assertThat(failures).as("failures").isEmpty();
        assertThat(ran).as("cases run").isGreaterThanOrEqualTo(50);
    }

    // ------------------------------------------------------------------ one case

    /** A fake credential in the text: the detector that should find it and the secret that must go. */
    record Secret(String id, String secret) {
    }

    /** Where the string value sits in the JSON document. */
    record Wrapper(String prefix, String suffix, String pointer) {
    }

    static final List<Wrapper> WRAPPERS = List.of(
            new Wrapper("{\"content\":", "}", "/content"),
            new Wrapper("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":", "}]}", "/messages/0/content"),
            new Wrapper("{\n  \"id\": 17,\n  \"text\": ", "\n}", "/text"),
            new Wrapper("[", "]", "/0"),
            new Wrapper("{\"a\":{\"b\":[null,true,1.5e3,", "]}}", "/a/b/3"),
            new Wrapper("{\"x\" : \"y\" ,\t\"data\"\t:\t", " , \"n\" : -4 }", "/data"));

    /**
     * One generated case: the text, the style that wrote it as a JSON string, the document around it and
     * the chunk splits to feed.
     */
    static final class Case {
        final long seed;
        final String text;
        final List<Secret> secrets;
        final String style;
        final String jsonString;
        final Wrapper wrapper;
        final List<int[]> splits;

        Case(long seed, String text, List<Secret> secrets, String style, String jsonString, Wrapper wrapper,
             List<int[]> splits) {
            this.seed = seed;
            this.text = text;
            this.secrets = secrets;
            this.style = style;
            this.jsonString = jsonString;
            this.wrapper = wrapper;
            this.splits = splits;
        }

        String body() {
            return wrapper.prefix() + jsonString + wrapper.suffix();
        }

        static Case generate(long seed) throws Exception {
            Random r = new Random(seed);
            Fakes f = new Fakes(r.nextLong());
            List<Secret> secrets = new ArrayList<>();
            String text = Gen.text(r, f, secrets);
            String[] style = new String[1];
            String js = Gen.encode(text, r, style);
            Wrapper w = WRAPPERS.get(r.nextInt(WRAPPERS.size()));
            int len = (w.prefix() + js + w.suffix()).getBytes(StandardCharsets.UTF_8).length;
            return new Case(seed, text, secrets, style[0], js, w, Gen.splits(r, len));
        }

        /** Runs the checks; returns null, or what failed. */
        String check() throws Exception {
            return JsonModeDifferentialTest.check(text, secrets, body(), wrapper.pointer(), splits, style);
        }
    }

    /** Output and findings of one redactor run. */
    record Outcome(byte[] output, Map<String, Long> findings) {
        String text() {
            return new String(output, StandardCharsets.UTF_8);
        }
    }

    /** Feeds {@code body} cut at {@code cuts} (ascending), as byte arrays or as byte buffers. */
    static Outcome redact(BodyFormat format, byte[] body, int[] cuts, boolean buffers) throws BodyTooLargeException {
        return redact(ALL, format, RedactionAction.REDACT, body, cuts, buffers);
    }

    /** Same as {@link #redact(BodyFormat, byte[], int[], boolean)} with other detectors and action. */
    static Outcome redact(DetectorSet set, BodyFormat format, RedactionAction action, byte[] body, int[] cuts,
                          boolean buffers) throws BodyTooLargeException {
        StreamingRedactor r = set.newRedactor(format, action, Long.MAX_VALUE);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int from = 0;
        for (int i = 0; i <= cuts.length; i++) {
            int to = i < cuts.length ? cuts[i] : body.length;
            if (buffers) {
                out.writeBytes(r.feed(ByteBuffer.wrap(body, from, to - from)));
            } else {
                out.writeBytes(r.feed(body, from, to - from));
            }
            from = to;
        }
        out.writeBytes(r.finish());
        return new Outcome(out.toByteArray(), r.findings());
    }

    static final int[] WHOLE = new int[0];

    /**
     * The checks (a), (b), (c) of the class comment for {@code text} written as the string at
     * {@code pointer} of {@code body}; returns null or a description of the first failure.
     */
    static String check(String text, List<Secret> secrets, String body, String pointer, List<int[]> splits, Object style)
            throws Exception {
        return check(ALL, text, secrets, body, pointer, splits, style);
    }

    /** Same as {@link #check(String, List, String, String, List, Object)} with the detectors of {@code set}. */
    static String check(DetectorSet set, String text, List<Secret> secrets, String body, String pointer,
                        List<int[]> splits, Object style) throws Exception {
        byte[] decoded = text.getBytes(StandardCharsets.UTF_8);
        byte[] raw = body.getBytes(StandardCharsets.UTF_8);
        Outcome plain = redact(set, BodyFormat.PLAIN, RedactionAction.REDACT, decoded, WHOLE, false);
        Outcome json = redact(set, BodyFormat.JSON, RedactionAction.REDACT, raw, WHOLE, false);
        String where = "\n  style: " + style + "\n  text: " + javaString(text) + "\n  body: " + javaString(body);
        // (a) findings, whole body
        if (!json.findings().equals(plain.findings())) {
            return "(a) findings differ: JSON " + json.findings() + ", PLAIN " + plain.findings() + where
                    + "\n  JSON output: " + javaString(json.text()) + "\n  PLAIN output: " + javaString(plain.text());
        }
        // (b) output parses, only the string changed, and it is the PLAIN output
        JsonNode tree;
        try {
            tree = MAPPER.readTree(json.output());
        } catch (Exception e) {
            return "(b) JSON output does not parse: " + e.getMessage().lines().findFirst().orElse("") + where
                    + "\n  JSON output: " + javaString(json.text());
        }
        JsonNode value = tree.at(pointer);
        JsonNode expectedTree = MAPPER.readTree(raw);
        replaceAt(expectedTree, pointer, plain.text());
        if (!value.isTextual() || !tree.equals(expectedTree)) {
            return "(b) JSON string differs from PLAIN output:\n  JSON  value: " + (value.isTextual()
                    ? javaString(value.asText()) : value.toString()) + "\n  PLAIN output: " + javaString(plain.text()) + where
                    + "\n  JSON output: " + javaString(json.text());
        }
        // (c) no secret survives
        for (Secret s : secrets) {
            if (value.asText().contains(s.secret())) {
                return "(c) secret of " + s.id() + " survives" + (plain.text().contains(s.secret()) ? " (PLAIN too)" : "")
                        + ": " + javaString(s.secret()) + where;
            }
        }
        // (a) splits: same findings and same bytes as the whole body
        for (int n = 0; n < splits.size(); n++) {
            int[] cuts = splits.get(n);
            Outcome split = redact(set, BodyFormat.JSON, RedactionAction.REDACT, raw, cuts, n % 2 == 1);
            if (!split.findings().equals(json.findings()) || !Arrays.equals(split.output(), json.output())) {
                return "(a) split differs from whole body: findings " + split.findings() + " vs " + json.findings()
                        + "\n  cuts: " + describeCuts(cuts) + where + "\n  whole output: " + javaString(json.text())
                        + "\n  split output: " + javaString(split.text());
            }
        }
        return null;
    }

    static boolean validUtf8(byte[] b) {
        try {
            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b));
            return true;
        } catch (java.nio.charset.CharacterCodingException e) {
            return false;
        }
    }

    static void replaceAt(JsonNode root, String pointer, String text) {
        JsonPointer p = JsonPointer.compile(pointer);
        JsonNode parent = root.at(p.head());
        String last = p.last().getMatchingProperty();
        if (parent instanceof ObjectNode o) {
            o.set(last, TextNode.valueOf(text));
        } else {
            ((ArrayNode) parent).set(Integer.parseInt(last), TextNode.valueOf(text));
        }
    }

    static String describeCuts(int[] cuts) {
        if (cuts.length > 12) {
            boolean ones = true;
            for (int i = 0; i < cuts.length; i++) {
                ones &= cuts[i] == i + 1;
            }
            if (ones) {
                return "every byte";
            }
            return cuts.length + " cuts, first " + Arrays.toString(Arrays.copyOf(cuts, 12));
        }
        return Arrays.toString(cuts);
    }

    /** {@code s} as a Java string literal (ASCII only). */
    static String javaString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    // ------------------------------------------------------------------ the generator

    static final class Gen {
        private Gen() {
        }

        static final String[] WORDS = {
            "the", "a", "of", "and", "to", "in", "is", "it", "task", "ask", "risk", "desk", "Skip", "skill", "tokens",
            "token", "secret", "secretary", "password", "passwords", "pwd", "key", "keys", "api", "Asia", "asian",
            "dapper", "hooks", "slack", "github", "ghp", "gho", "sig", "eyJ", "private", "BEGIN", "END", "-----", "://",
            "sk-", "sk", "SK", "xoxb", "glpat", "npm", "pypi", "AccountKey", "DefaultEndpointsProtocol", "Q~", "T3BlbkFJ",
            "whsec", "shpat", "AGE-SECRET-KEY-1", "lin_api", "hvs.", "PMAK-", "SG.", "AIza", "ABSK", "gsk_", "xai-",
            "dop_v1_", "hf_", "api_org_", "access_key", "apikey", "api-key", "passwd", "sig=", "a3t", "acca", "abia",
            "akia", "npm_", "ghs_", "ghu_", "ghr_", "github_pat_", "rk_test_", "sk_live", "bedrock-api-key-", "dapi",
            "SharedAccessKey=", "hooks.slack.com", "secret_access_key", "private_key", "-----BEGIN ", "xapp-", "gldt-",
            "glrt-", "xoxe.", "pypi-AgE", "sk-or-v1-", "sk-ant-", "\u00e9t\u00e9", "na\u00efve", "\u65e5\u672c\u8a9e",
            "\u0440\u0443\u0441\u0441\u043a\u0438\u0439", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "caf\u00e9",
        };

        static final String[] SPECIAL = {
            "\"", "\\", "\\\\", "\n", "\r\n", "\r", "\t", "/", "//", "\\/", "\\u0041", "\\u00e9", "\\\"", "\\n", "\\",
            "\u00e9", "\u00fc", "\u00f1", "\u2713", "\u20ac", "\ud83d\ude00", "\ud83d\udd11", "\ud83d\udc4d\ud83c\udffd",
            "\u0000", "\u0001", "\u001f", "\u007f", "\u0085", "\u00a0", "\u2028", "\u2029", "\ufeff", "\b", "\f", "'",
            "`", "{", "}", "[", "]", ",", ":", "=", "&", "?", "%", "$", "<", ">", "@", "#", ";", "~", "|", "*", "+",
            "\\\\\\", "\\u", "\\ud83d", "u0041", "\\x41", "\u00ff", "\u0100", "\u07ff", "\u0800", "\uffff",
            "\ud800\udc00", "\udbff\udfff",
        };

        static final String[] SNIPPETS = {
            "def handler(event):\n    return {\"status\": 200, \"body\": event}\n",
            "const token = getToken(request);",
            "if (a < b && c > d) { x = \"y\"; }",
            "printf(\"%s\\n\", s);",
            "C:\\Users\\me\\AppData\\Local\\file.txt",
            "re.compile(r\"\\d+\\.\\d*\")",
            "{\"nested\": \"json\", \"arr\": [1, 2, {\"k\": null}]}",
            "<a href=\"https://example.com/a?b=c&d=e\">link</a>",
            "SELECT * FROM users WHERE name = 'O''Brien';",
            "$ export PATH=/usr/local/bin:$PATH",
            "curl -sS -H \"Accept: application/json\" https://api.example.com/v1/items?limit=10&offset=20",
            "grep -rn \"password\" ./src | head -5",
            "echo \"$HOME\" && ls -la /tmp/",
            "password = changeme123",
            "api_key = process.env.OPENAI_API_KEY",
            "\"max_tokens\": 4096, \"token_count\": 12",
            "secret = os.environ[\"SECRET\"]",
            "https://user:password@example.com/",
            "ssh://git@github.com:org/repo",
            "redis://:${REDIS_PASSWORD}@cache:6379",
            "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
            "Keep your private key secret; -----BEGIN RSA PRIVATE KEY----- starts it.",
            "eyJhbGciOiJIUzI1NiJ9 alone is a header",
            "from huggingface_hub import hf_hub_download",
            "SKIP the task, ask later",
            "the T3BlbkFJ marker alone",
            "xai-grok-2 model",
            "npm_config_registry and npm_install",
            "tab\tseparated\tvalues\n",
            "line1\r\nline2\rline3",
            "key\\\"quoted\\\"",
            "ends with backslash\\",
            "\\u0041KIA and \\u0067hp_ written literally",
            "JSON in JSON: {\"a\": \"b\\\"c\", \"d\": \"\\u00e9\"}",
            "    at dev.sluice.proxy.Handler.run(Handler.java:42)\n",
            "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n",
            "// TODO: rotate the token\n",
            "# password: see vault\n",
            "token_count=12 password_hint=none",
        };

        /**
         * Separators around a credential: none of them joins a credential's characters. A literal
         * backslash-n ({@code \\n}, as in double-encoded JSON) only follows one: before it, its {@code n}
         * is a letter before the credential, and detectors that need a word start rightly skip it.
         */
        static final String[] SEPARATORS = {" ", "\n", "\r\n", "\t", " \"", "\" ", "'", ", ", "; ", " \u00e9 ",
            " \ud83d\ude00 ", "\u00a0", ": ", "(", ")", "\n\n", "<", ">", "\ud83d\ude00", "\u00e9", "\u2713", "\u0000",
            "\\\\", "\\\"", "\u007f", "/"};
        /** After a generic secret: what ends its value (which takes any non-ASCII byte). */
        static final String[] SEPARATORS_AFTER = {" ", "\n", "\t", "\" ", "'", ", ", "\\n", ")", ">", "\\n\\n"};
        /** After any other credential. */
        static final String[] SEPARATORS_AFTER_ANY = {" ", "\n", "\t", "\" ", "'", ", ", "\\n", ")", ">", "\\n\\n",
            "\ud83d\ude00", "\u00e9", "\u00a0", "\u0000", "\\", "\\\"", "\u2028"};

        /** Code points of several scripts and emoji, for runs of non-ASCII text. */
        static final int[][] SCRIPTS = {{0x00c0, 0x00ff}, {0x0400, 0x04ff}, {0x0600, 0x06ff}, {0x3040, 0x30ff},
            {0x4e00, 0x9fff}, {0xac00, 0xd7a3}, {0x1f300, 0x1f64f}, {0x1f900, 0x1f9ff}};

        static String nonAscii(Random r, int n) {
            StringBuilder b = new StringBuilder();
            int[] script = SCRIPTS[r.nextInt(SCRIPTS.length)];
            for (int i = 0; i < n; i++) {
                if (r.nextInt(20) == 0) {
                    script = SCRIPTS[r.nextInt(SCRIPTS.length)];
                }
                b.appendCodePoint(script[0] + r.nextInt(script[1] - script[0] + 1));
                if (r.nextInt(12) == 0) {
                    b.append(r.nextBoolean() ? ' ' : '\n');
                }
            }
            return b.toString();
        }

        static String text(Random r, Fakes f, List<Secret> secrets) {
            int size = r.nextInt(20);
            int fragments = size < 2 ? 100 + r.nextInt(500) : size < 3 ? 1 : 1 + r.nextInt(30);
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < fragments; i++) {
                int kind = r.nextInt(10);
                if (kind < 3) {
                    String[] cred = credential(r, f);
                    secrets.add(new Secret(cred[0], cred[1]));
                    if (b.length() > 0 || r.nextBoolean()) {
                        b.append(pick(r, SEPARATORS));
                    }
                    b.append(cred[2]);
                    if (i < fragments - 1 || r.nextBoolean()) {
                        b.append(pick(r, cred[0].equals("generic-secret") ? SEPARATORS_AFTER : SEPARATORS_AFTER_ANY));
                    }
                } else if (kind == 3 && r.nextInt(4) == 0) {
                    // a run of non-ASCII text: long escape runs with ensure_ascii, sometimes a keyword in it
                    b.append(nonAscii(r, 1 + r.nextInt(r.nextInt(8) == 0 ? 4000 : 200)));
                    if (r.nextBoolean()) {
                        b.append(pick(r, WORDS)).append(nonAscii(r, 1 + r.nextInt(20)));
                    }
                } else if (kind < 6) {
                    int n = 1 + r.nextInt(6);
                    for (int w = 0; w < n; w++) {
                        b.append(pick(r, WORDS)).append(r.nextInt(4) == 0 ? pick(r, SPECIAL) : " ");
                    }
                } else if (kind < 8) {
                    b.append(pick(r, SPECIAL));
                } else {
                    b.append(pick(r, SNIPPETS));
                }
            }
            return b.toString();
        }

        static String pick(Random r, String... a) {
            return a[r.nextInt(a.length)];
        }

        /** A random value for a labelled secret: alphanumeric, at least one digit, no placeholder word. */
        static String value(Fakes f, int n) {
            while (true) {
                String s = f.of(ALNUM, n);
                if (BuiltinDetectors.notPlaceholder(s) && !BuiltinDetectors.looksLikeIdentifier(s)
                        && Detector.shannonEntropy(s) >= 3.2) {
                    return s;
                }
            }
        }

        /** Returns {id, secret, text containing it}. */
        static String[] credential(Random r, Fakes f) {
            String s;
            switch (r.nextInt(44)) {
                case 0:
                    s = pick(r, "AKIA", "ASIA", "ABIA", "ACCA", "A3T" + f.of(UPPER + DIGITS, 1)) + f.of(BASE32, 16);
                    return c("aws-access-key-id", s, pick(r, "export AWS_ACCESS_KEY_ID=" + s, "{\"AccessKeyId\": \"" + s + "\"}",
                            "key " + s));
                case 1:
                    s = f.of(B64, 40);
                    return c("aws-secret-access-key", s, pick(r, "aws_secret_access_key = " + s,
                            "{\"SecretAccessKey\": \"" + s + "\", \"x\": 1}", "AWS_SECRET_KEY=" + s, "secret-access-key: " + s));
                case 2:
                    s = r.nextBoolean() ? "ABSK" + f.of(B64, 60 + r.nextInt(140))
                            : "bedrock-api-key-" + f.of(B64, 60 + r.nextInt(300));
                    return c("aws-bedrock-api-key", s, pick(r, "AWS_BEARER_TOKEN_BEDROCK=" + s, "bedrock " + s));
                case 3:
                    s = f.github("ghp_");
                    return c("github-pat", s, pick(r, "git clone https://github.com/o/r # token " + s + " end", "GH_TOKEN " + s));
                case 4:
                    s = "github_pat_" + f.of(ALNUM, 22) + "_" + f.of(ALNUM, 59);
                    return c("github-fine-grained-pat", s, "GITHUB_TOKEN=" + s);
                case 5:
                    s = f.github("gho_");
                    return c("github-oauth-token", s, "oauth " + s);
                case 6:
                    s = f.github(pick(r, "ghu_", "ghs_"));
                    return c("github-app-token", s, pick(r, "user token: " + s + ".", "installation token '" + s + "'"));
                case 7:
                    s = "ghr_" + f.of(ALNUM, 36 + r.nextInt(41));
                    return c("github-refresh-token", s, "refresh=" + s);
                case 8:
                    s = "glpat-" + f.of(URLSAFE, 20);
                    return c("gitlab-pat", s, "PRIVATE-TOKEN: " + s);
                case 9:
                    s = pick(r, "gldt", "glrt", "glcbt", "glptt", "glft", "gloas", "glsoat", "glimt", "glagent", "glffct")
                            + "-" + f.of(ALNUM, 1) + f.of(URLSAFE, 19 + r.nextInt(20))
                            + (r.nextBoolean() ? "." + f.of(LOWER + DIGITS, 9) : "");
                    return c("gitlab-token", s, "runner token " + s + " registered");
                case 10:
                    s = pick(r, "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxe-", "xoxe.xoxp-") + f.of(DIGITS, 12) + "-"
                            + f.of(DIGITS, 13) + "-" + f.of(ALNUM, 24);
                    return c("slack-token", s, "SLACK_BOT_TOKEN=" + s);
                case 11:
                    s = "xapp-1-A" + f.of(UPPER + DIGITS, 10) + "-" + f.of(DIGITS, 13) + "-" + f.of(HEX, 64);
                    return c("slack-app-token", s, "app token " + s);
                case 12:
                    s = "hooks.slack.com/services/T" + f.of(UPPER + DIGITS, 8) + "/B" + f.of(UPPER + DIGITS, 10) + "/"
                            + f.of(ALNUM, 24);
                    return c("slack-webhook-url", s, "curl -X POST https://" + s + " -d '{}'");
                case 13:
                    s = pick(r, "sk_", "rk_") + pick(r, "live_", "test_", "prod_") + value(f, 10 + r.nextInt(90));
                    return c("stripe-secret-key", s, pick(r, "stripe.api_key = \"" + s + "\"", "restricted " + s));
                case 14:
                    s = "whsec_" + f.of(ALNUM, 32);
                    return c("stripe-webhook-secret", s, "endpoint secret " + s);
                case 15:
                    s = r.nextBoolean() ? "sk-" + pick(r, "proj-", "svcacct-", "admin-", "") + f.of(URLSAFE, 20 + r.nextInt(60))
                            + "T3Blbk" + "FJ" + f.of(URLSAFE, 20 + r.nextInt(60))
                            : "sk-" + f.of(ALNUM, 20) + "T3Blbk" + "FJ" + f.of(ALNUM, 20);
                    return c("openai-api-key", s, pick(r, "OPENAI_API_KEY=" + s, "old style " + s));
                case 16:
                    s = "sk-ant-" + pick(r, "api03-", "admin01-", "oat01-") + f.of(URLSAFE, 93) + "AA";
                    return c("anthropic-api-key", s, "ANTHROPIC_API_KEY=" + s);
                case 17:
                    s = "sk-or-" + "v1-" + f.of(HEX, 64);
                    return c("openrouter-api-key", s, "key " + s);
                case 18:
                    s = "gsk_" + f.of(ALNUM, 52);
                    return c("groq-api-key", s, "GROQ_API_KEY=" + s);
                case 19:
                    s = "xai-" + f.of(ALNUM, 80);
                    return c("xai-api-key", s, "XAI " + s);
                case 20:
                    s = "AIza" + f.of(URLSAFE, 35);
                    return c("google-api-key", s, "https://maps.googleapis.com/maps/api/js?key=" + s + "&callback=x");
                case 21: {
                    String pk = Fakes.pem("", f.pemBody(2 + r.nextInt(10), "\\n"), "\\n");
                    return c("gcp-service-account-key", pk, "{\n  \"type\": \"service_account\",\n  \"private_key_id\": \""
                            + f.of(HEX, 40) + "\",\n  \"private_key\": \"" + pk + "\\n\",\n  \"client_email\": \"a@b.iam.gserviceaccount.com\"\n}");
                }
                case 22:
                    s = "DefaultEndpointsProtocol=https;AccountName=sluicetest;AccountKey=" + f.of(B64, 86) + "==";
                    return c("azure-storage-connection-string", s, "conn = \"" + s + ";EndpointSuffix=core.windows.net\"");
                case 23:
                    s = f.of(B64, 86) + "==";
                    return c("azure-storage-account-key", s, "AccountKey=" + s + ";");
                case 24:
                    s = f.of(B64, 43) + "%3D";
                    return c("azure-sas-token", s, "https://acct.blob.core.windows.net/c/b.txt?sp=r&st=2026-01-01&sv=2022-11-02&sr=b&sig=" + s);
                case 25:
                    s = f.of(B64, 43) + "=";
                    return c("azure-shared-access-key", s,
                            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + s);
                case 26:
                    s = f.of(ALNUM, 3) + f.of(DIGITS, 1) + "Q~" + f.of(ALNUM, 1) + f.of(URLSAFE + "~.", 30 + r.nextInt(3))
                            + f.of(ALNUM, 1);
                    return c("azure-ad-client-secret", s, "client_credential: " + s);
                case 27:
                    s = "dapi" + f.of(HEX, 32);
                    return c("databricks-token", s, "DATABRICKS_TOKEN=" + s);
                case 28:
                    s = f.github("npm_");
                    return c("npm-token", s, "//registry.example.org/:_authToken=" + s);
                case 29:
                    s = "pypi-" + "AgEIcHlwaS5vcmc" + f.of(URLSAFE, 60 + r.nextInt(120)) + f.of(ALNUM, 1);
                    return c("pypi-token", s, "password = " + s);
                case 30:
                    s = r.nextBoolean() ? "hf_" + f.of(UPPER + LOWER, 34) : "api_org_" + f.of(ALNUM, 34);
                    return c("huggingface-token", s, "HF_TOKEN=" + s);
                case 31:
                    s = "SK" + f.of(HEX, 32);
                    return c("twilio-api-key", s, "twilio key " + s + " secret");
                case 32:
                    s = "SG." + f.of(URLSAFE, 22) + "." + f.of(URLSAFE, 42) + f.of(ALNUM, 1);
                    return c("sendgrid-api-key", s, "SENDGRID_API_KEY=" + s);
                case 33:
                    s = pick(r, "shpat_", "shpss_", "shpca_", "shppa_") + f.of(HEX, 32);
                    return c("shopify-token", s, "X-Shopify-Access-Token: " + s);
                case 34:
                    s = pick(r, "dop_", "doo_", "dor_") + "v1_" + f.of(HEX, 64);
                    return c("digitalocean-token", s, "doctl auth init -t " + s);
                case 35:
                    s = pick(r, "hvs.", "hvb.") + f.of(URLSAFE, 24 + r.nextInt(66)) + f.of(ALNUM, 1);
                    return c("vault-token", s, "VAULT_TOKEN=" + s);
                case 36:
                    s = "PMAK-" + f.of(HEX, 24) + "-" + f.of(HEX, 34);
                    return c("postman-api-key", s, "x-api-key " + s);
                case 37:
                    s = "lin_" + "api_" + f.of(ALNUM, 40);
                    return c("linear-api-key", s, "LINEAR " + s);
                case 38:
                    s = "AGE-SECRET-KEY-1" + f.of("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58);
                    return c("age-secret-key", s, "# created: 2026\n" + s);
                case 39: {
                    String nl = pick(r, "\n", "\n", "\r\n", "\\n");
                    s = switch (r.nextInt(4)) {
                        case 0 -> Fakes.pem(pick(r, "RSA", "OPENSSH", "EC", "DSA", "ENCRYPTED", ""), f.pemBody(2 + r.nextInt(20), nl), nl);
                        case 1 -> "-----BEGIN EC PRIVATE KEY-----" + nl + "Proc-Type: 4,ENCRYPTED" + nl + "DEK-Info: AES-128-CBC,"
                                + f.of(HEX, 32).toUpperCase() + nl + nl + f.pemBody(3, nl) + "-----END EC PRIVATE KEY-----";
                        case 2 -> "-----BEGIN PGP PRIVATE KEY BLOCK-----" + nl + nl + f.pemBody(4, nl) + "=" + f.of(B64, 4) + nl
                                + "-----END PGP PRIVATE KEY BLOCK-----";
                        default -> Fakes.pem("RSA", f.pemBody(2, nl), nl);
                    };
                    return c("private-key-pem", s, pick(r, "cat id_rsa\n" + s + "\n$ ", s));
                }
                case 40:
                    s = "eyJ" + f.of(URLSAFE, 20 + r.nextInt(20)) + ".eyJ" + f.of(URLSAFE, 40 + r.nextInt(200)) + "."
                            + f.of(URLSAFE, 42) + f.of(ALNUM, 1);
                    return c("jwt", s, pick(r, "Authorization: Bearer " + s, "jwt=" + s));
                case 41: {
                    s = value(f, 12 + r.nextInt(20));
                    String scheme = pick(r, "postgres", "postgresql", "mysql", "redis", "mongodb+srv", "amqp", "https", "ftp", "s3",
                            "postgresql+asyncpg", "mysql+pymysql", "h2");
                    if (r.nextInt(4) == 0) {
                        scheme = pick(r, "x-1.2", "s3+1.0", "a" + f.of(DIGITS, 16));
                    }
                    return c("url-password", s, "DATABASE_URL=" + scheme + "://app:" + s + "@db.internal:5432/app");
                }
                case 42: {
                    s = value(f, 12 + r.nextInt(30));
                    String label = pick(r, "DB_PASSWORD=", "\"client_secret\": \"", "api_key: '", "token=", "passwd: ", "pwd=",
                            "\"apiKey\" := ", "access_key => ", "SECRET_VALUE: ", "my-api-key=");
                    String close = label.endsWith("\"") ? "\"" : label.endsWith("'") ? "'" : "";
                    return c("generic-secret", s, label + s + close);
                }
                default: {
                    s = f.of(B64, 86) + "==";
                    return c("azure-storage-account-key", s, "accountkey = " + s);
                }
            }
        }

        static String[] c(String id, String secret, String text) {
            return new String[] {id, secret, text};
        }

        // -------------------------------------------------------------- JSON string styles

        static String encode(String text, Random r, String[] style) throws Exception {
            switch (r.nextInt(7)) {
                case 0:
                    style[0] = "Fakes.jsonString(text, false, false)";
                    return Fakes.jsonString(text, false, false);
                case 1:
                    style[0] = "Fakes.jsonString(text, true, false)";
                    return Fakes.jsonString(text, true, false);
                case 2: {
                    boolean slash = r.nextBoolean();
                    style[0] = "Fakes.jsonString(text, " + slash + ", true)";
                    return Fakes.jsonString(text, slash, true);
                }
                case 3:
                    style[0] = "Jackson";
                    return MAPPER.writeValueAsString(text);
                case 4:
                    style[0] = "Jackson ESCAPE_NON_ASCII";
                    return MAPPER_ASCII.writeValueAsString(text);
                default: {
                    double p = new double[] {0.02, 0.1, 0.3, 0.6, 1.0}[r.nextInt(5)];
                    long escSeed = r.nextLong();
                    style[0] = "randomEscapes(text, " + p + ", " + escSeed + "L)";
                    return randomEscapes(text, p, escSeed);
                }
            }
        }

        /**
         * Escapes each character with probability {@code p} as {@code \}{@code uXXXX} (hex digits in random
         * case) — keyword characters included — or, for a slash, {@code \/}; characters JSON requires to be
         * escaped use the short forms or {@code \}{@code u} at random. A surrogate pair is written whole, as
         * UTF-8 or as two escapes.
         */
        static String randomEscapes(String s, double p, long seed) {
            Random r = new Random(seed);
            StringBuilder b = new StringBuilder("\"");
            for (int i = 0; i < s.length(); ) {
                int cp = s.codePointAt(i);
                boolean esc = r.nextDouble() < p;
                if (cp == '"') {
                    b.append(esc ? u(cp, r) : "\\\"");
                } else if (cp == '\\') {
                    b.append(esc ? u(cp, r) : "\\\\");
                } else if (cp < 0x20) {
                    String shortForm = switch (cp) {
                        case '\b' -> "\\b";
                        case '\f' -> "\\f";
                        case '\n' -> "\\n";
                        case '\r' -> "\\r";
                        case '\t' -> "\\t";
                        default -> null;
                    };
                    b.append(shortForm == null || esc ? u(cp, r) : shortForm);
                } else if (cp == '/' && esc) {
                    b.append(r.nextBoolean() ? "\\/" : u(cp, r));
                } else if (esc) {
                    if (Character.isSupplementaryCodePoint(cp)) {
                        b.append(u(Character.highSurrogate(cp), r)).append(u(Character.lowSurrogate(cp), r));
                    } else {
                        b.append(u(cp, r));
                    }
                } else {
                    b.appendCodePoint(cp);
                }
                i += Character.charCount(cp);
            }
            return b.append('"').toString();
        }

        static String u(int c, Random r) {
            String hex = String.format("%04x", c);
            StringBuilder b = new StringBuilder("\\u");
            for (char h : hex.toCharArray()) {
                b.append(r.nextBoolean() ? Character.toUpperCase(h) : h);
            }
            return b.toString();
        }

        /** Chunk splits of a body of {@code len} bytes: random cuts, fixed chunk sizes, one byte each. */
        static List<int[]> splits(Random r, int len) {
            List<int[]> splits = new ArrayList<>();
            if (len < 2) {
                return splits;
            }
            int n = 1 + r.nextInt(3);
            for (int s = 0; s < n; s++) {
                int k = 1 + r.nextInt(Math.min(10, len - 1));
                int[] cuts = r.ints(k, 1, len).sorted().distinct().toArray();
                splits.add(cuts);
            }
            int chunk = len <= 2000 && r.nextInt(3) == 0 ? 1 : 1 + r.nextInt(Math.max(1, Math.min(4096, len / 2)));
            if (chunk > 1 && len / chunk > 2000) {
                chunk = len / 2000 + 1;
            }
            int[] cuts = new int[(len - 1) / chunk];
            for (int i = 0; i < cuts.length; i++) {
                cuts[i] = (i + 1) * chunk;
            }
            splits.add(cuts);
            return splits;
        }
    }

    // ------------------------------------------------------------------ reduced failures (disabled until fixed)

    static Outcome plain(String text) throws BodyTooLargeException {
        return redact(BodyFormat.PLAIN, text.getBytes(StandardCharsets.UTF_8), WHOLE, false);
    }

    static Outcome json(String body) throws BodyTooLargeException {
        return redact(BodyFormat.JSON, body.getBytes(StandardCharsets.UTF_8), WHOLE, false);
    }

    /** The decoded string {@code "a"} of a JSON-mode output {@code {"a": ...}}. */
    static String valueOfA(Outcome o) throws Exception {
        return MAPPER.readTree(o.output()).get("a").asText();
    }

    /**
     * A hit inside a pending match of its own detector is skipped as covered even where its own match
     * reaches past that match. Here the generic-secret value {@code PROD_TOKEN:} covers the label
     * {@code TOKEN}, so the value after it is never redacted: PLAIN and JSON alike.
     */
    @Test

    void reproHitSkippedAsCoveredLeaksASecretThatExtendsPastTheCoveringMatch() throws Exception {
        String value = Gen.value(new Fakes(31), 24);
        String text = "api_key=PROD_TOKEN: " + value;
        assertThat(plain(text).text()).isEqualTo("api_key=[REDACTED:generic-secret] [REDACTED:generic-secret]");
        assertThat(valueOfA(json("{\"a\":" + Fakes.jsonString(text, false, false) + "}"))).doesNotContain(value);
    }

    /**
     * A match merged with an overlapping match of another detector takes the earlier detector's name and
     * the union of both ranges; a later hit of that detector inside the union is skipped as covered.
     * Here the generic-secret value {@code S1-secret-access-key:} merges with the first AWS match and covers
     * the second label, and the second secret ({@code -xxxx} makes the generic value a placeholder) leaks.
     */
    @Test

    void reproMergedMatchCoversTheLabelOfTheNextSecret() throws Exception {
        Fakes f = new Fakes(32);
        String first = f.of(B64, 40);
        String second = f.of(B64, 40);
        String text = "secret-access-key: " + first + "-secret-access-key: " + second + "-xxxx";
        Outcome p = plain(text);
        assertThat(p.text()).doesNotContain(second);
        assertThat(p.findings()).isEqualTo(Map.of("aws-secret-access-key", 2L));
        assertThat(valueOfA(json("{\"a\":" + Fakes.jsonString(text, false, false) + "}"))).doesNotContain(second);
    }

    /**
     * JSON: a keyword found through an escape trigger is added to the pending hits after the literal
     * keywords of the same scan, so hits are no longer resolved in position order and the "covered" test
     * of {@link #reproHitSkippedAsCoveredLeaksASecretThatExtendsPastTheCoveringMatch} answers differently:
     * escaping one letter of the first label changes the findings (and the output).
     */
    @Test

    void reproKeywordFoundThroughAnEscapeIsResolvedAfterALaterLiteralOne() throws Exception {
        Outcome literal = json("{\"a\":\"apikey=API_KEY: PRIVAT6r\"}");
        Outcome escaped = json("{\"a\":\"api\\u006Bey=API_KEY: PRIVAT6r\"}");
        assertThat(escaped.findings()).isEqualTo(literal.findings());
        assertThat(valueOfA(escaped)).isEqualTo(valueOfA(literal));
    }

    /**
     * The same out-of-order resolution, the other way round: with the {@code s} of {@code sk-ant-}
     * escaped, the generic match at {@code APIKEY} is resolved before the Anthropic one and covers the
     * label {@code TOKEN}; its value, which runs past the generic match (capped at 128 bytes), keeps its
     * tail in JSON mode, while PLAIN mode (hits in position order) redacts it all.
     */
    @Test

    void reproEscapedKeywordResolvedLateLeavesTheTailOfTheNextValue() throws Exception {
        Fakes f = new Fakes(34);
        String key = "sk-ant-" + "api03-" + f.of(URLSAFE, 93) + "AA";
        String tail = f.of(ALNUM, 19);
        String text = "APIKEY=" + key + "\u00a0\ud83d\ude00TOKEN=.-" + tail;
        String body = "{\"a\":" + Fakes.jsonString(text, false, false).replace("sk-ant-", "\\u0073k-ant-") + "}";
        assertThat(MAPPER.readTree(body).get("a").asText()).isEqualTo(text);
        Outcome p = plain(text);
        assertThat(p.text()).isEqualTo("APIKEY=[REDACTED:anthropic-api-key]");
        assertThat(valueOfA(json(body))).isEqualTo(p.text());
    }

    /**
     * A match is released (emitted) once the hold-back has passed its start, even when a hit of another
     * detector inside it is still pending; that hit's match is then clipped to start after the released
     * one and counted apart. So the findings depend on how much text follows: with a JSON Web Token
     * inside a generic-secret value, PLAIN reports {generic-secret=1, jwt=1} when 400 bytes follow and
     * {jwt=1} when a few do; JSON mode (a longer hold-back) reports {jwt=1} for both.
     */
    @Test

    void reproMatchReleasedWhileAHitInsideItIsPending() throws Exception {
        Fakes f = new Fakes(35);
        String jwt = "eyJ" + f.of(URLSAFE, 30) + ".eyJ" + f.of(URLSAFE, 60) + "." + f.of(URLSAFE, 43);
        String shortText = "secret:wt=" + jwt + "\n";
        String longText = shortText + "lorem ipsum ".repeat(34);
        assertThat(plain(longText).findings()).isEqualTo(plain(shortText).findings());
        assertThat(json("{\"a\":" + Fakes.jsonString(longText, false, false) + "}").findings())
                .isEqualTo(plain(longText).findings());
    }

    /**
     * JSON: the look-behind context decoded before a keyword is {@link DetectorSet#CONTEXT_BYTES} (16)
     * raw bytes, but the url-password pattern looks up to 21 characters back for a letter of the scheme
     * ({@code (?<=[A-Za-z][A-Za-z0-9+.-]{0,20})://}); with the scheme's digits and dots written as
     * {@code &#92;uXXXX} escapes (or 16 digits after its letter) the letter is outside the window and the password
     * is missed. PLAIN mode finds it.
     */
    @Test

    void reproUrlPasswordAfterASchemeEndingInEscapedDigits() throws Exception {
        String pw = Gen.value(new Fakes(36), 16);
        String text = "DATABASE_URL=s1.0://app:" + pw + "@db.internal/app";
        assertThat(plain(text).findings()).isEqualTo(Map.of("url-password", 1L));
        String body = "{\"a\":\"DATABASE_URL=\\u0073\\u0031\\u002e\\u0030://app:" + pw + "@db.internal/app\"}";
        assertThat(MAPPER.readTree(body).get("a").asText()).isEqualTo(text);
        assertThat(json(body).findings()).isEqualTo(Map.of("url-password", 1L));
        String digits = "DATABASE_URL=a1234567890123456://app:" + pw + "@db.internal/app";
        assertThat(plain(digits).findings()).isEqualTo(Map.of("url-password", 1L));
        assertThat(json("{\"a\":\"" + digits + "\"}").findings()).isEqualTo(Map.of("url-password", 1L));
    }

    /**
     * The generic-secret value is capped at 128 bytes, and a non-ASCII character may straddle the cap:
     * the replacement then ends in the middle of its UTF-8 bytes, and the continuation bytes left behind
     * make the PLAIN output invalid UTF-8 (Japanese text after {@code password: } is enough).
     */
    @Test

    void reproPlainCutsAUtf8CharacterInTwo() throws Exception {
        String japanese = "\u30d1\u30b9\u30ef\u30fc\u30c9\u306f\u7ba1\u7406\u8005\u306b\u554f\u3044\u5408\u308f\u305b\u3066"
                .repeat(3);
        String text = "password: " + japanese;
        assertThat(validUtf8(plain(text).output())).as(javaString(plain(text).text())).isTrue();
    }

    /**
     * The same cut in JSON mode, with the character written as UTF-8 (not escaped): the output is not
     * valid UTF-8, so not valid JSON. (With the character escaped, the whole escape is replaced and the
     * output stays valid.)
     */
    @Test

    void reproJsonOutputDoesNotParseWhenTheCapCutsALiteralCharacter() throws Exception {
        String value = Gen.value(new Fakes(37), 127);
        Outcome o = json("{\"a\":\"secret:" + value + "\u00e9\"}");
        assertThat(o.findings()).isEqualTo(Map.of("generic-secret", 1L));
        assertThat(validUtf8(o.output())).isTrue();
        assertThat(valueOfA(o)).isEqualTo("secret:[REDACTED:generic-secret]");
    }

    /**
     * BuiltinDetectors: azure-storage-account-key has maxLength 100, but its pattern matches up to
     * 10 + 2 + 1 + 2 + 88 + 2 = 105 characters; with a space on each side of {@code =} an 88-character key
     * (86 + {@code ==}) does not fit the region and is missed, in every mode.
     */
    @Test

    void reproAzureAccountKeyWithSpacesAroundTheEqualsSign() throws Exception {
        String key = new Fakes(38).of(B64, 86) + "==";
        assertThat(plain("AccountKey=" + key + ";").findings()).isEqualTo(Map.of("azure-storage-account-key", 1L));
        assertThat(plain("AccountKey = " + key + ";").findings()).isEqualTo(Map.of("azure-storage-account-key", 1L));
    }

    // ------------------------------------------------------------------ sanity of the harness

    @Test
    void harnessAgreesOnAKnownGoodCase() throws Exception {
        Fakes f = new Fakes(77);
        String key = f.github("ghp_");
        String text = "token " + key + " \"quoted\" \\ / \u00e9 \ud83d\ude00\n";
        for (String js : List.of(Fakes.jsonString(text, true, true), MAPPER.writeValueAsString(text),
                Gen.randomEscapes(text, 1.0, 5))) {
            String body = "{\"content\":" + js + "}";
            assertThat(check(text, List.of(new Secret("github-pat", key)), body, "/content",
                    Gen.splits(new Random(1), body.length()), "test")).isNull();
            assertThat(MAPPER.readTree(body).get("content").asText()).isEqualTo(text);
        }
    }
}
