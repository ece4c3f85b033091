package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import org.junit.jupiter.api.Test;

class PrecheckTest {

    /**
     * The assignment prechecks never answer false where their detector reports a secret at the keyword
     * (its pattern matches and its gates accept the secret): random assignments built from the characters
     * the patterns care about (operators, spaces, quotes, backslashes, value characters and excluded
     * ones, dotted identifiers), at every available length.
     */
    @Test
    void assignmentPrecheckIsSoundForItsDetectors() {
        Random random = new Random(7);
        String[] pieces = {"=", ":", ">", ":=", "=>", " ", "  ", "\t", "\n", "\"", "'", "\\", "\\\"", ",", ")", "$", ".",
            "=", "a", "Z", "9", "/", "+", "_", "-", "x7Hq", "Kp2Zr8", "A1b2C3d4E5f6G7h8", "~", "\u00e9"};
        for (Detector d : List.of(BuiltinDetectors.GENERIC_SECRET, BuiltinDetectors.AWS_SECRET_ACCESS_KEY)) {
            int matched = 0;
            for (int round = 0; round < 60_000; round++) {
                String label = d.keywords().get(random.nextInt(d.keywords().size()));
                StringBuilder b = new StringBuilder(label);
                if (random.nextBoolean()) {
                    b.append("_PROD");
                }
                int n = random.nextInt(12);
                for (int k = 0; k < n; k++) {
                    b.append(pieces[random.nextInt(pieces.length)]);
                }
                int valueLength = random.nextInt(3) == 0 ? 40 : random.nextInt(12);
                String alphabet = random.nextInt(3) > 0 ? "aB3/+xY9kQ7mZ5" : "abcdXYZW_.";
                for (int k = 0; k < valueLength; k++) {
                    b.append(alphabet.charAt(random.nextInt(alphabet.length())));
                }
                if (random.nextBoolean()) {
                    b.append(pieces[random.nextInt(pieces.length)]);
                }
                String s = b.toString();
                byte[] text = s.getBytes(StandardCharsets.ISO_8859_1);
                Matcher m = d.pattern().matcher(s);
                if (!m.lookingAt() || !d.accepts(m.group(d.secretGroup()))) {
                    continue;
                }
                matched++;
                for (int limit = text.length; limit >= 0; limit--) {
                    if (limit >= m.end()) {
                        assertThat(d.precheck().mayMatch(text, 0, limit)).as("%s limit %d: %s", d.id(), limit, s).isTrue();
                    }
                }
            }
            assertThat(matched).as(d.id()).isGreaterThan(100);
        }
    }

    @Test
    void assignmentPrecheckRejectsShortValues() {
        Precheck p = BuiltinDetectors.GENERIC_SECRET.precheck();
        // each text starts with its keyword
        for (String s : List.of("api_key=API_KEY, timeout=30)", "tokens=4096)", "tokens\":4096,\"stream\"", "token = \"\"")) {
            byte[] text = s.getBytes(StandardCharsets.US_ASCII);
            assertThat(p.mayMatch(text, 0, text.length)).as(s).isFalse();
        }
        byte[] ok = "password := \"Xk29fjQ1\"".getBytes(StandardCharsets.US_ASCII);
        assertThat(p.mayMatch(ok, 0, ok.length)).isTrue();
    }

    @Test
    void genericSecretPrecheckRejectsIdentifierValuesOnlyWhereTheValidatorWould() {
        Precheck generic = BuiltinDetectors.GENERIC_SECRET.precheck();
        for (String s : List.of("API_KEY = os.environ.get(\"SERVICE_API_KEY\")", "token: settings.api_token,",
                "secret=\"config.secret_value\"")) {
            byte[] text = s.getBytes(StandardCharsets.US_ASCII);
            assertThat(generic.mayMatch(text, 0, text.length)).as(s).isFalse();
        }
        // a digit, a value cut by the end of the available text, a trailing dot: not known to be identifiers
        for (String s : List.of("API_KEY = os.environ2.get(", "API_KEY = os.environ.get", "token: settings.api.token.,")) {
            byte[] text = s.getBytes(StandardCharsets.US_ASCII);
            assertThat(generic.mayMatch(text, 0, text.length)).as(s).isTrue();
        }
        // the AWS secret key's validator does not reject identifiers, so neither does its precheck
        byte[] aws = "aws_secret = abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN;".getBytes(StandardCharsets.US_ASCII);
        assertThat(BuiltinDetectors.AWS_SECRET_ACCESS_KEY.precheck().mayMatch(aws, 0, aws.length)).isTrue();
    }

    /**
     * The built-in prechecks read raw JSON text with {@code \"} escapes as the text without the
     * backslashes (see the class comment of {@link Precheck}): never false where the unescaped text gives
     * true.
     */
    @Test
    void builtinPrechecksReadEscapedQuotesAsQuotes() {
        Random random = new Random(11);
        String[] pieces = {"=", ":", ":=", "=>", " ", "\"", "'", ",", ")", ".", "a", "Z", "9", "_", "-", "x7Hq", "os.env",
            "Kp2Zr8", "A1b2C3d4E5f6G7h8", "@", "/", "://"};
        for (Detector d : List.of(BuiltinDetectors.GENERIC_SECRET, BuiltinDetectors.AWS_SECRET_ACCESS_KEY,
                BuiltinDetectors.URL_PASSWORD)) {
            int trueCount = 0;
            for (int round = 0; round < 30_000; round++) {
                String label = d.keywords().get(random.nextInt(d.keywords().size()));
                StringBuilder b = new StringBuilder(label);
                int n = random.nextInt(14);
                for (int k = 0; k < n; k++) {
                    b.append(pieces[random.nextInt(pieces.length)]);
                }
                byte[] plain = b.toString().getBytes(StandardCharsets.ISO_8859_1);
                byte[] escaped = b.toString().replace("\"", "\\\"").getBytes(StandardCharsets.ISO_8859_1);
                if (d.precheck().mayMatch(plain, 0, plain.length)) {
                    trueCount++;
                    assertThat(d.precheck().mayMatch(escaped, 0, escaped.length)).as("%s: %s", d.id(), b).isTrue();
                }
            }
            assertThat(trueCount).as(d.id()).isGreaterThan(100);
        }
    }
}
