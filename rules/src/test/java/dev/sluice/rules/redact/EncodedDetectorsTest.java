package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
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

    /** A {@code .env} file whose secrets have no vendor prefix. */
    private String dotEnv(String password, String token) {
        return "# app settings\nAPP_ENV=production\nDB_HOST=db.internal\nDB_PORT=5432\nDB_USER=app\nDB_PASSWORD=" + password
                + "\nCACHE_URL=redis://cache.internal:6379/0\nAPI_TOKEN=" + token + "\nLOG_LEVEL=info\n";
    }

    @Test
    void base64OfADotEnvFileIsReplacedWhole() {
        String pw = f.of(Fakes.ALNUM, 18) + "7x";
        String tok = f.of(Fakes.ALNUM, 32);
        String enc = b64(dotEnv(pw, tok));
        String secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-env\ntype: Opaque\ndata:\n  .env: " + enc + "\n";
        Fakes.Run r = plain(secret);
        assertThat(r.output()).doesNotContain(enc.substring(0, 16)).doesNotContain(enc.substring(enc.length() - 16))
                .isEqualTo(secret.replace(enc, "[REDACTED:generic-secret]"));
        assertThat(r.redactor().findings()).isEqualTo(Map.of("generic-secret", 1L));
        Fakes.Run j = json(chat(secret));
        assertThat(j.output()).doesNotContain(enc.substring(0, 16)).contains("[REDACTED:generic-secret]")
                .startsWith("{\"model\"").endsWith("\"}]}");
        // base64url, and a prefixed token further in: counted under its own id
        String gh = f.github("ghp_");
        String url = b64url("APP_ENV=ci\nREGION=eu-west-1\nGITHUB_TOKEN=" + gh + "\n");
        assertThat(plain("CI_ENV_B64=" + url + "\n").output()).isEqualTo("CI_ENV_B64=[REDACTED:github-pat]\n");
    }

    @Test
    void base64OfYamlJsonAndDockerConfigsIsReplaced() {
        String pw = f.of(Fakes.ALNUM, 20) + "3q";
        String[] texts = {
            "database:\n  host: db.internal\n  port: 5432\n  username: app\n  password: " + pw + "\n",
            "{\n  \"service\": \"billing\",\n  \"region\": \"eu-west-1\",\n  \"apiKey\": \"" + pw + "\"\n}\n",
            "[client]\nuser = backup\nhost = db.internal\nsecret = " + pw + "\n",
            "{\n\t\"credsStore\": \"\",\n\t\"auths\": {\n\t\t\"registry.example.org\": {\n\t\t\t\"auth\": \""
                    + b64("robot:" + pw) + "\"\n\t\t}\n\t}\n}",
        };
        for (String t : texts) {
            for (String enc : new String[] {b64(t), b64url(t)}) {
                Fakes.Run r = plain("  config: " + enc + "\n");
                assertThat(r.output()).as(t).doesNotContain(enc.substring(0, 12)).startsWith("  config: [REDACTED:").endsWith("]\n");
                assertThat(json(chat("value " + enc + " end")).output()).as(t).doesNotContain(enc.substring(0, 12))
                        .contains(" end");
            }
        }
    }

    @Test
    void base64TextFoundAtEveryChunkCutAfterLongProse() throws Exception {
        String pw = f.of(Fakes.ALNUM, 22) + "9k";
        // the keyword lies about 2,300 characters into the run: beyond the plain and JSON holdback
        StringBuilder flags = new StringBuilder();
        for (int i = 0; i < 90; i++) {
            flags.append("FEATURE_FLAG_").append(i).append("=on\n");
        }
        String env = "NODE_ENV=production\nPORT=8080\n" + flags + "SESSION_SECRET=" + pw + "\n";
        assertThat(env.indexOf("SECRET") * 4 / 3).isGreaterThan(2200);
        String enc = b64(env);
        String prose = "Here is the manifest the deploy step printed, including the Secret it created.\n".repeat(8);
        byte[] body = (prose + "data:\n  env: " + enc + "\nend of output\n").getBytes(StandardCharsets.UTF_8);
        for (int cut = 1; cut < body.length; cut += 29) {
            for (BodyFormat format : new BodyFormat[] {BodyFormat.PLAIN, BodyFormat.JSON}) {
                StreamingRedactor r = SET.newRedactor(format, RedactionAction.REDACT, Long.MAX_VALUE);
                String out = new String(r.feed(body, 0, cut), StandardCharsets.UTF_8)
                        + new String(r.feed(body, cut, body.length - cut), StandardCharsets.UTF_8)
                        + new String(r.finish(), StandardCharsets.UTF_8);
                assertThat(out).as("%s cut at %d", format, cut).isEqualTo(
                        prose + "data:\n  env: [REDACTED:generic-secret]\nend of output\n");
            }
        }
    }

    /**
     * JSON encoders that write {@code /} as {@code \/} (PHP) or {@code +} as {@code &#92;u002B} (.NET) cut
     * a base64 run in the raw bytes into short pieces: the base64 stems, which count only inside runs of
     * 24 characters, are then found in the decoded window around the escapes, at every chunk cut.
     */
    @Test
    void base64WithEscapedSlashesAndPlusesInJson() throws Exception {
        // '?' at every decoded offset 2 mod 3 (but in the assignment's name) puts a '/' at every fourth
        // base64 character: no raw piece of the run between two \/ holds 24 characters
        String head = "# build settings\nREGION=eu-west-1\n";
        String name = "DB_PASSWORD=";
        StringBuilder t = new StringBuilder(head + name + f.of(Fakes.ALNUM, 24) + "\nLOG=debug and more text\n");
        for (int i = 0; i < t.length(); i++) {
            if (i % 3 == 2 && (i < head.length() || i >= head.length() + name.length()) && t.charAt(i) != '\n') {
                t.setCharAt(i, '?');
            }
        }
        String enc = b64(t.toString());
        assertThat(enc).doesNotContainPattern("[A-Za-z0-9+_-]{24}");
        String gh = f.github("ghp_");
        String tok = b64(gh + "?>?");
        for (String e : new String[] {enc, tok}) {
            String escaped = e.replace("/", "\\/").replace("+", "\\u002B");
            byte[] body = ("{\"messages\":[{\"role\":\"tool\",\"content\":\"data:\\n  env: " + escaped + "\\nend\"}]}")
                    .getBytes(StandardCharsets.UTF_8);
            String id = e == enc ? "generic-secret" : "github-pat";
            for (int cut = 1; cut < body.length; cut += 7) {
                StreamingRedactor r = SET.newRedactor(BodyFormat.JSON, RedactionAction.REDACT, Long.MAX_VALUE);
                String out = new String(r.feed(body, 0, cut), StandardCharsets.UTF_8)
                        + new String(r.feed(body, cut, body.length - cut), StandardCharsets.UTF_8)
                        + new String(r.finish(), StandardCharsets.UTF_8);
                assertThat(out).as("%s cut at %d", id, cut)
                        .isEqualTo("{\"messages\":[{\"role\":\"tool\",\"content\":\"data:\\n  env: [REDACTED:" + id + "]\\nend\"}]}");
            }
        }
    }

    @Test
    void base64TextLeavesNonSecretsAlone() {
        String stem = EncodedDetectors.base64Stem("PASSWORD", 0);
        List<String> clean = new ArrayList<>(List.of(
                // text without a secret value
                b64("Please reset your password before the token expires; the secret rotates weekly.\n"),
                b64("DB_PASSWORD=changeme\nAPI_TOKEN=${API_TOKEN}\nSECRET_KEY=<your-secret-key>\n"),
                b64("password: \"\"\ntoken: xxxxxxxxxxxxxxxx\napi_key: os.environ[\"API_KEY\"]\n"),
                // certificates and public keys written in base64 as a whole (tls.crt)
                b64("-----BEGIN CERTIFICATE-----\n" + f.pemBody(3, "\n") + "-----END CERTIFICATE-----\n"),
                b64("-----BEGIN PUBLIC KEY-----\n" + f.of(Fakes.B64, 64) + "\n-----END PUBLIC KEY-----\n")));
        for (int i = 0; i < 20; i++) {
            // random data, an image, an integrity digest and a hash, each holding a keyword's stem
            clean.add(f.of(Fakes.B64, 40 + i * 7) + stem + f.of(Fakes.B64, 60));
            clean.add("data:image/png;base64,iVBORw0KGgo" + f.of(Fakes.B64, 200) + stem + f.of(Fakes.B64, 300) + "==");
            clean.add("\"integrity\": \"sha512-" + f.of(Fakes.B64, 30) + stem + f.of(Fakes.B64, 46) + "==\"");
            clean.add("sha256=" + f.of(Fakes.B64, 20) + stem + f.of(Fakes.B64, 13) + "=");
        }
        for (String c : clean) {
            assertThat(plain(c).redactor().findings()).as(c).isEmpty();
            assertThat(plain(c).output()).isEqualTo(c);
            assertThat(json(chat(c)).redactor().findings()).as("json " + c).isEmpty();
        }
    }

    @Test
    void base64TextStemsAndBounds() {
        // "PASSWORD" at decoded offsets 0, 1 and 2 (mod 3): the characters fixed whatever surrounds it
        assertThat(EncodedDetectors.base64Stem("PASSWORD", 0)).isEqualTo("UEFTU1dPUk");
        for (int a = 0; a < 3; a++) {
            String stem = EncodedDetectors.base64Stem("PASSWORD", a);
            for (String before : new String[] {"", "A", "BC", "DEF", "x=1\nDB_", "__"}) {
                if (before.length() % 3 == a) {
                    assertThat(b64(before + "PASSWORD=x")).as("%d %s", a, before).contains(stem);
                }
            }
        }
        assertThat(EncodedDetectors.isText("DB_PASSWORD=abc\n".getBytes(StandardCharsets.UTF_8))).isTrue();
        assertThat(EncodedDetectors.isText(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})).isFalse();
        // the look-back within a run does not hold back ordinary text
        assertThat(SET.holdbackBytes()).isLessThan(EncodedDetectors.MAX_TEXT_OFFSET);
        assertThat(EncodedDetectors.BASE64_TEXT.maxCharsBeforeKeyword()).isEqualTo(EncodedDetectors.MAX_TEXT_OFFSET);
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
