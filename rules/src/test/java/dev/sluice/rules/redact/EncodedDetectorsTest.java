package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Encoded secrets (issue 21, item 2): base64/base64url tokens and {@code \x}/{@code &#92;u} escapes are decoded
 * and scanned again in the same streaming pass; the whole encoded token is replaced, under the inner
 * detector's id; clean encoded text is left alone.
 */
class EncodedDetectorsTest {

    private static final DetectorSet SET = DetectorSet.builtins();
    private final Fakes f = new Fakes(21);

    private static String b64(String s) {
        return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String b64url(String s) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String hexEscapes(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            b.append(String.format("\\x%02x", (int) c));
        }
        return b.toString();
    }

    private static Fakes.Run plain(String text) {
        return Fakes.run(SET, BodyFormat.PLAIN, RedactionAction.REDACT, text);
    }

    private static Fakes.Run json(String text) {
        return Fakes.run(SET, BodyFormat.JSON, RedactionAction.REDACT, text);
    }

    /** A chat request whose one message is {@code content}, JSON-escaped. */
    private static String chat(String content) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":" + Fakes.jsonString(content, false, false) + "}]}";
    }

    @Test
    void base64OfAGithubTokenIsReplacedWholeUnderTheInnerId() {
        String token = f.github("ghp_");
        String enc = b64(token);
        Fakes.Run r = plain("echo " + enc + " | base64 -d");
        assertThat(r.output()).isEqualTo("echo [REDACTED:github-pat] | base64 -d");
        assertThat(r.redactor().findings()).isEqualTo(Map.of("github-pat", 1L));
    }

    @Test
    void base64urlWithoutPaddingAndInJson() {
        String token = "sk-ant-api03-" + f.of(Fakes.URLSAFE, 93) + "AA";
        String enc = b64url(token);
        assertThat(plain("TOKEN_B64=" + enc + "\n").output()).doesNotContain(enc).contains("[REDACTED:");
        Fakes.Run r = json(chat("value: " + enc));
        assertThat(r.output()).doesNotContain(enc).contains("[REDACTED:anthropic-api-key]");
        assertThat(r.output()).startsWith("{\"model\":\"m\"").endsWith("\"}]}");
    }

    @Test
    void base64AfterAnAssignment() {
        String enc = b64url("AKIA" + f.of(Fakes.BASE32, 16));
        assertThat(plain("CI_SECRET_B64URL=" + enc + "\n").output()).isEqualTo("CI_SECRET_B64URL=[REDACTED:aws-access-key-id]\n");
    }

    @Test
    void base64SplitAcrossChunksIsFound() throws Exception {
        String enc = b64("AKIA" + f.of(Fakes.BASE32, 16));
        byte[] body = ("data:\n  key: " + enc + "\n").getBytes(StandardCharsets.UTF_8);
        for (int cut = 1; cut < body.length; cut += 3) {
            StreamingRedactor r = SET.newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, Long.MAX_VALUE);
            String out = new String(r.feed(body, 0, cut), StandardCharsets.UTF_8)
                    + new String(r.feed(body, cut, body.length - cut), StandardCharsets.UTF_8)
                    + new String(r.finish(), StandardCharsets.UTF_8);
            assertThat(out).as("cut at %d", cut).doesNotContain(enc.substring(0, 12)).contains("[REDACTED:aws-access-key-id]");
        }
    }

    @Test
    void hexEscapesOfATokenInShellAndInJson() {
        String token = f.github("ghp_");
        String x = hexEscapes(token);
        Fakes.Run r = plain("printf '" + x + "' > ~/.token");
        assertThat(r.output()).isEqualTo("printf '[REDACTED:github-pat]' > ~/.token");
        Fakes.Run j = json(chat("printf '" + x + "'"));
        assertThat(j.output()).doesNotContain("x67").contains("[REDACTED:github-pat]");
        assertThat(j.redactor().findings()).isEqualTo(Map.of("github-pat", 1L));
    }

    @Test
    void unicodeEscapesInAJsonStringInsideJson() {
        String token = f.github("ghp_");
        String inner = "{\"token\": \"" + token.replace("_", "\\u005f") + "\"}";
        Fakes.Run p = plain(inner);
        assertThat(p.output()).isEqualTo("{\"token\": \"[REDACTED:github-pat]\"}");
        Fakes.Run j = json(chat(inner));
        assertThat(j.output()).doesNotContain(token.substring(4)).contains("[REDACTED:github-pat]");
        assertThat(j.output()).startsWith("{\"model\"").endsWith("\"}]}");
    }

    @Test
    void twoLevelsAreDecodedAThirdIsNot() {
        String token = f.github("ghp_");
        String twice = hexEscapes(b64(token));
        Fakes.Run r = plain("printf '" + twice + "' | base64 -d");
        assertThat(r.output()).isEqualTo("printf '[REDACTED:github-pat]' | base64 -d");
        assertThat(r.redactor().findings()).isEqualTo(Map.of("github-pat", 1L));
        String thrice = hexEscapes(b64(b64(token)).replace("=", ""));
        assertThat(plain(thrice).redactor().findings()).isEmpty();
    }

    @Test
    void openSshAndPemKeysInDoubleEscapedJson() {
        for (String kind : new String[] {"OPENSSH", "RSA", "EC"}) {
            String body = f.pemBody(4, "\n");
            String pem = Fakes.pem(kind, body, "\n");
            // a tool result whose text is JSON holding the key: escaped twice in the request body
            String inner = "{\"private_key\": \"" + pem + "\"}";
            Fakes.Run r = json(chat(inner));
            assertThat(r.output()).as(kind).doesNotContain(body.substring(0, 64)).contains("[REDACTED:private-key-pem]");
            assertThat(r.output()).startsWith("{\"model\"").endsWith("\"}]}");
        }
    }

    @Test
    void percentEncodedHeaderAndAssignment() {
        String token = f.of(Fakes.ALNUM, 40);
        Fakes.Run r = plain("GET /log?line=Authorization%3A%20Bearer%20" + token + "&level=debug");
        assertThat(r.output()).doesNotContain(token).endsWith("&level=debug").contains("[REDACTED:authorization-credential]");
        String ghp = f.github("ghp_");
        Fakes.Run q = json(chat("redirect=https%3A%2F%2Fci.example.org%2Fhook%3Ftoken%3D" + ghp + " done"));
        assertThat(q.output()).doesNotContain(ghp.substring(4)).contains(" done");
        String pw = f.of(Fakes.ALNUM, 14) + "7";
        Fakes.Run s = plain("log: body=password%3D" + pw + "%40" + f.of(Fakes.ALNUM, 6) + " status=200");
        assertThat(s.output()).doesNotContain(pw).endsWith(" status=200");
    }

    @Test
    void cleanEncodedTextIsLeftAlone() {
        String[] clean = {
            "echo " + b64("ghp_ is the prefix of a GitHub token") + " | base64 -d",
            "Z2hwX" + "short",
            "printf '\\x48\\x65\\x6c\\x6c\\x6f\\x2c\\x20\\x77\\x6f\\x72\\x6c\\x64'",
            "const s = \"caf\\u00e9 na\\u00efve r\\u00e9sum\\u00e9\";",
            "C:\\users\\xavier\\u-boot",
            "{\"text\": \"\\u4f60\\u597d\\u4e16\\u754c\"}",
            "https://www.example.org/search?q=how%20to%20rotate%20a%20token&lang=en",
            "next=https%3A%2F%2Fapp.example.org%2Fsettings%2Fprofile%3Ftab%3Dsecurity",
            "name=Jane%20Doe&email=jane%40example.org&plan=pro%2B",
            "S3 key photos%2F2026%2F12%2Fimg_0042.jpg",
        };
        for (String c : clean) {
            assertThat(plain(c).redactor().findings()).as(c).isEmpty();
            assertThat(plain(c).output()).isEqualTo(c);
            assertThat(json(chat(c)).redactor().findings()).as("json " + c).isEmpty();
        }
        // ensure_ascii JSON of a non-Latin text: \\u escapes of the body's own JSON are no escape keyword
        String cjk = "{\"content\":\"\\u4f60\\u597d\\u4e16\\u754c\\u3002\"}";
        assertThat(json(cjk).output()).isEqualTo(cjk);
    }

    @Test
    void reportAndBlockCountUnderTheInnerId() {
        String enc = b64(f.github("ghp_"));
        StreamingRedactor r = SET.newRedactor(BodyFormat.PLAIN, RedactionAction.BLOCK, Long.MAX_VALUE);
        try {
            r.feed(("x " + enc + " y").getBytes(StandardCharsets.UTF_8));
        } catch (BodyTooLargeException e) {
            throw new AssertionError(e);
        }
        r.finish();
        assertThat(r.blocked()).isTrue();
        assertThat(r.findings()).isEqualTo(Map.of("github-pat", 1L));
    }

    @Test
    void decodersAreBounded() {
        assertThat(EncodedDetectors.base64Stem("ghp_")).isEqualTo("Z2hwX");
        assertThat(EncodedDetectors.base64("not base64!")).isNull();
        assertThat(EncodedDetectors.unescape("plain")).isNull();
        assertThat(new String(EncodedDetectors.unescape("a\\x41\\u0042"), StandardCharsets.UTF_8)).isEqualTo("aAB");
        assertThat(EncodedDetectors.BASE64_TOKEN.maxLength()).isEqualTo(EncodedDetectors.MAX_BASE64);
    }
}
