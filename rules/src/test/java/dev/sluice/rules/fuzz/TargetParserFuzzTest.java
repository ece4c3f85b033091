package dev.sluice.rules.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.nio.charset.StandardCharsets;

/**
 * Fuzzes the request-target parser (RFC 9112 section 3.2): any input is either a canonical target or
 * a {@link MalformedTargetException}, never another exception; and a canonical target is a fixed point
 * (parsing its own authority gives it back), so no two spellings can canonicalise differently on a
 * second pass. Regression mode (every {@code mvn verify}) runs the seeds in
 * {@code TargetParserFuzzTestInputs/}; {@code scripts/fuzz.sh} fuzzes it for a bounded time.
 */
class TargetParserFuzzTest {

    @FuzzTest(maxDuration = "30s")
    void parseAuthority(byte[] input) {
        String text = new String(input, StandardCharsets.ISO_8859_1);
        Target target;
        try {
            target = TargetParser.parseAuthority(text);
        } catch (MalformedTargetException e) {
            assertThat(e.getMessage()).isNotEmpty();
            return;
        }
        checkCanonical(target);
    }

    @FuzzTest(maxDuration = "30s")
    void parseAbsoluteForm(byte[] input) {
        String text = new String(input, StandardCharsets.ISO_8859_1);
        HttpTarget http;
        try {
            http = TargetParser.parseAbsoluteForm(text);
        } catch (MalformedTargetException e) {
            assertThat(e.getMessage()).isNotEmpty();
            return;
        }
        assertThat(http.pathAndQuery()).startsWith("/");
        assertThat(http.pathAndQuery()).doesNotContain("#").doesNotContain(" ");
        checkCanonical(http.target());
    }

    private static void checkCanonical(Target target) {
        assertThat(target.port()).isBetween(1, 65535);
        assertThat(target.host()).isNotEmpty().isLowerCase().doesNotEndWith(".");
        Target again;
        try {
            again = TargetParser.parseAuthority(target.authority());
        } catch (MalformedTargetException e) {
            throw new AssertionError("the canonical authority " + target.authority() + " does not parse: "
                    + e.getMessage(), e);
        }
        assertThat(again).isEqualTo(target);
    }
}
