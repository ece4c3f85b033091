package dev.sluice.proxy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command line as an operator uses it: check, decide, token new. */
class CliTest {

    private record Run(int code, String out, String err) {
    }

    private static Run sluice(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(code, out.toString(), err.toString());
    }

    private static final String GOOD = """
            version: 1
            extensions:
              github:
                allow:
                  - host: api.github.com
                    ports: [443]
                  - host: metadata.test
            network:
              hosts:
                api.github.com: 140.82.112.6
                metadata.test: 169.254.169.254
            """;

    @Test
    void checkAcceptsAGoodPolicy(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("good.yaml"), GOOD);
        Run run = sluice("check", file.toString());
        assertThat(run.code()).isZero();
        assertThat(run.out()).contains("ok").contains("1 extensions");
    }

    @Test
    void checkPrintsEveryErrorWithFileLineAndColumnAndExitsOne(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("bad.yaml"), """
                version: 1
                extensions:
                  github:
                    alow:
                      - host: api.github.com
                    allow:
                      - cidr: 10.0.0.1/8
                """);
        Run run = sluice("check", file.toString());
        assertThat(run.code()).isEqualTo(1);
        assertThat(run.out()).contains(file + ":4:5:").contains("alow");
        assertThat(run.out()).contains(file + ":7:").contains("10.0.0.0/8");
    }

    @Test
    void decideExplainsAnAllowWithRuleAndAddressClass(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("p.yaml"), GOOD);
        Run run = sluice("decide", "--policy", file.toString(), "--extension", "github", "api.github.com:443");
        assertThat(run.code()).as(run.err()).isZero();
        assertThat(run.out()).contains("allow allowlisted rule=extensions.github.allow[0]")
                .contains("address:   140.82.112.6 public")
                .contains("dial=140.82.112.6");
    }

    @Test
    void decideExplainsDenials(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("p.yaml"), GOOD);
        Run port = sluice("decide", "--policy", file.toString(), "--extension", "github", "https://api.github.com:8443/x");
        assertThat(port.code()).isEqualTo(3);
        assertThat(port.out()).contains("deny port_not_allowed");
        Run metadata = sluice("decide", "--policy", file.toString(), "--extension", "github", "http://metadata.test/");
        assertThat(metadata.code()).isEqualTo(3);
        assertThat(metadata.out()).contains("address:   169.254.169.254 metadata")
                .contains("deny address_class: metadata rule=network.address_class");
        Run unknown = sluice("decide", "--policy", file.toString(), "--extension", "nobody", "api.github.com:443");
        assertThat(unknown.code()).isEqualTo(2);
    }

    @Test
    void tokenNewPrintsATokenAndTheHashThatAuthenticatesIt() throws Exception {
        Run run = sluice("token", "new", "github");
        assertThat(run.code()).isZero();
        Matcher token = Pattern.compile("(?m)^token: (\\S+)$").matcher(run.out());
        Matcher sha = Pattern.compile("token_sha256: \"([0-9a-f]{64})\"").matcher(run.out());
        assertThat(token.find()).isTrue();
        assertThat(sha.find()).isTrue();
        Policy policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  github:
                    auth: { token_sha256: "%s" }
                """.formatted(sha.group(1)), "inline");
        assertThat(policy.authenticate("github", token.group(1))).isPresent();
        assertThat(policy.authenticate("github", token.group(1) + "x")).isEmpty();
        assertThat(sluice("token", "new", "github").out()).doesNotContain(token.group(1));
    }
}
