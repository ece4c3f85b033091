package dev.sluice.rules.redflag;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Red flags in a plain-text redactor's pass ({@link RedFlagFold#textBody}, a response's decoded text: the
 * text values of its events joined without a separator) flag what the second pass ({@link RedFlagScan}
 * with the separator {@code ""}) flags: each built-in's examples split across pieces at every offset,
 * random texts, a flag acted on at a piece's end ({@link StreamingRedactor#settleTap}), and the credential
 * findings are the same with and without the tap.
 */
class RedFlagTextFoldTest {

    private static final DetectorSet DETECTORS = DetectorSet.builtins();
    private static final java.util.regex.Pattern ENCODED = java.util.regex.Pattern.compile("[A-Za-z0-9+/=]{16,}");

    private static Set<String> secondPass(List<RedFlagRule> rules, List<String> pieces) {
        RedFlagScan scan = new RedFlagScan(rules, null, Set.of(), "");
        for (String piece : pieces) {
            scan.feed(piece);
            scan.flush();
        }
        return scan.flagged();
    }

    /**
     * The text redactor over {@code pieces}, settling after each when {@code settle}; checks its findings
     * against the untapped one.
     */
    private static Set<String> folded(RedFlagSettings settings, List<RedFlagRule> rules, List<String> pieces,
                                      boolean settle) throws Exception {
        RedFlagFold fold = RedFlagFold.of(settings);
        assertThat(fold).isNotNull();
        RedFlagFold.Body flags = fold.textBody(rules, Set.of());
        StreamingRedactor r = DETECTORS.withTap(fold.keywords())
                .newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, flags);
        StreamingRedactor plain = DETECTORS.newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE);
        for (String piece : pieces) {
            byte[] b = piece.getBytes(StandardCharsets.UTF_8);
            r.feed(b);
            plain.feed(b);
            if (settle) {
                r.settleTap();
            }
        }
        r.finish();
        plain.finish();
        assertThat(r.findings()).as("the tap changes no finding").isEqualTo(plain.findings());
        assertThat(flags.drain().stream().map(RedFlagRule::id).toList()).containsExactlyInAnyOrderElementsOf(flags.flagged());
        return flags.flagged();
    }

    @Test
    void eachExampleSplitAcrossPiecesAtAnyOffsetIsFlaggedAsTheSecondPassFlagsIt() throws Exception {
        List<RedFlagRule> rules = RedFlagFoldTest.allRules();
        RedFlagSettings settings = new RedFlagSettings(rules, List.of());
        for (Map.Entry<String, List<String>> e : RedFlagFoldTest.positives().entrySet()) {
            for (String example : e.getValue()) {
                String text = "some clean text before. " + example + " and after.";
                for (int cut = 1; cut < text.length(); cut++) {
                    int cut2 = Math.min(text.length(), cut + 3);
                    List<String> pieces = List.of(text.substring(0, cut), text.substring(cut, cut2), text.substring(cut2));
                    Set<String> fold = folded(settings, rules, pieces, true);
                    assertThat(fold).as("%s in %s", e.getKey(), pieces).contains(e.getKey());
                    assertThat(fold).as("%s", pieces).isEqualTo(secondPass(rules, pieces));
                }
            }
        }
    }

    @Test
    void aMatchIsFlaggedWhenItsPieceHasBeenFedAndSettledBeforeMoreTextComes() throws Exception {
        List<RedFlagRule> rules = RedFlagFoldTest.allRules();
        RedFlagFold fold = RedFlagFold.of(new RedFlagSettings(rules, List.of()));
        for (Map.Entry<String, List<String>> e : RedFlagFoldTest.positives().entrySet()) {
            for (String example : e.getValue()) {
                RedFlagFold.Body flags = fold.textBody(rules, Set.of());
                StreamingRedactor r = DETECTORS.withTap(fold.keywords())
                        .newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, flags);
                r.feed(("clean text, then " + example + " ").getBytes(StandardCharsets.UTF_8));
                r.settleTap();
                assertThat(flags.drain().stream().map(RedFlagRule::id)).as(example).contains(e.getKey());
                r.feed("and more text that has nothing in it.".getBytes(StandardCharsets.UTF_8));
                r.settleTap();
                r.finish();
                assertThat(flags.drain().stream().map(RedFlagRule::id)).as("a rule counts once").doesNotContain(e.getKey());
            }
        }
    }

    @Test
    void aCredentialSplitAcrossPiecesIsFoundByTheTappedRedactor() throws Exception {
        List<RedFlagRule> rules = RedFlagFoldTest.allRules();
        RedFlagFold fold = RedFlagFold.of(new RedFlagSettings(rules, List.of()));
        String key = "sk-ant-api03-" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1bD3fH5jL7nP9rT1vX3zB5dF7hJ9lN1pR3tV5xZ7bD9fH1jLAA";
        String text = "here it is: " + key + " keep it safe";
        for (int cut = 1; cut < text.length(); cut++) {
            RedFlagFold.Body flags = fold.textBody(rules, Set.of());
            StreamingRedactor r = DETECTORS.withTap(fold.keywords())
                    .newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, flags);
            r.feed(text.substring(0, cut).getBytes(StandardCharsets.UTF_8));
            r.settleTap();
            r.feed(text.substring(cut).getBytes(StandardCharsets.UTF_8));
            r.finish();
            assertThat(r.findings()).as("cut at %d", cut).containsEntry("anthropic-api-key", 1L);
        }
    }

    @Test
    void theTextFoldAndTheSecondPassAgreeOnRandomTexts() throws Exception {
        Random random = new Random(23);
        List<String> fragments = new ArrayList<>();
        RedFlagFoldTest.positives().values().forEach(fragments::addAll);
        fragments.addAll(List.of("the system is up", "Human factors", "10.2.3", "version 172.32.0.1", "${HOME}",
                "{{name}}", "<% x %>", "curl -s https://api.example | jq .", "cat the logs", ".ssh/config",
                "api.internal", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY", "0123456789abcdef0123", "ACME-", "acme-12",
                "a.b.c.lan", "\n\n", "  ", "| sh", "base64 -d", "ignore previous", "<|", "id_rsa", "[INST]",
                "open ~/.env now", "os.environ", "caf\u00e9 \u4e2d\u6587 \ud83d\ude00", "cat .env", "cat a.env",
                "curl x | jq", "curl x | sh", "wget -q x |  sudo  bash", "\n$ curl -s x | bash", "curl \"x\" | sh",
                "curl x |\nsh", "Assistant: hi", "\n\nSystem : x", "\n\nHuman:", "\n \n\tAssistant:", "\"\n\nHuman: x",
                "10.0.0.1", "110.0.0.1", "x.10.1.2.3", "172.16.1.1", "x.local:80", "db.corp-x"));
        String filler = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789.,;:/|$%{}<>()[]_-\n\t\"'=+\\\u00e9";
        List<RedFlagRule> rules = RedFlagFoldTest.allRules();
        RedFlagSettings settings = new RedFlagSettings(rules, List.of());
        for (int round = 0; round < Integer.getInteger("fold.rounds", 300); round++) {
            StringBuilder v = new StringBuilder("x ");
            int parts = random.nextInt(10);
            for (int k = 0; k < parts; k++) {
                if (random.nextInt(3) == 0) {
                    String f = fragments.get(random.nextInt(fragments.size()));
                    // an encoded command is taken whole: one cut at its start may hold none of the shell
                    // words whose stems the fold looks for, where the second pass decodes every long run
                    // (the documented difference)
                    int from = random.nextInt(3) == 0 && !ENCODED.matcher(f).find() ? random.nextInt(f.length()) : 0;
                    v.append(f, from, f.length());
                } else {
                    int len = random.nextInt(random.nextInt(8) == 0 ? 3000 : 60);
                    for (int i = 0; i < len; i++) {
                        v.append(filler.charAt(random.nextInt(filler.length())));
                    }
                }
            }
            String text = v.append(" .").toString();
            // pieces as a stream's deltas: a few characters to a few hundred, cut anywhere (not inside a surrogate pair)
            List<String> pieces = new ArrayList<>();
            for (int at = 0; at < text.length(); ) {
                int end = Math.min(text.length(), at + 1 + random.nextInt(random.nextBoolean() ? 8 : 400));
                if (end < text.length() && Character.isLowSurrogate(text.charAt(end))) {
                    end++;
                }
                pieces.add(text.substring(at, end));
                at = end;
            }
            // the reference reads the whole text at once (the second pass, fed the same pieces, also reads a
            // match its lookbehind would refuse where a piece begins: 10.0.0.1 in 1|10.0.0.1); the fold is
            // not settled at the pieces' ends (where both read the text so far, a.b.c.lan in a.b.c.lan|2)
            assertThat(folded(settings, rules, pieces, false)).as("round %d: %s", round, text)
                    .isEqualTo(secondPass(rules, List.of(text)));
        }
    }
}
