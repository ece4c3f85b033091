package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** docs/policy.md's key tables list every key the loader accepts, each under its mapping's heading. */
class PolicyKeysDocTest {

    @Test
    void everyAcceptedKeyHasARowInItsTable() throws Exception {
        Path doc = Path.of("..", "docs", "policy.md");
        String text = Files.readString(doc, StandardCharsets.UTF_8);
        for (Map.Entry<String, Set<String>> table : PolicyLoader.keyTables().entrySet()) {
            String section = section(text, table.getKey());
            assertThat(section).as("docs/policy.md has a section ### " + table.getKey()).isNotNull();
            for (String key : table.getValue()) {
                assertThat(section).as("### " + table.getKey() + " has a row for `" + key + "`")
                        .containsPattern("(?m)^\\| `" + java.util.regex.Pattern.quote(key) + "`");
            }
        }
    }

    /**
     * The text from the heading {@code ### <title>...} to the next {@code ##} or {@code ###} heading (its
     * {@code ####} subsections included), or null.
     */
    private static String section(String text, String title) {
        int at = text.indexOf("\n### " + title);
        if (at < 0) {
            return null;
        }
        java.util.regex.Matcher next = java.util.regex.Pattern.compile("\n#{2,3} ").matcher(text);
        int end = next.find(at + 1) ? next.start() : text.length();
        return text.substring(at, end);
    }
}
