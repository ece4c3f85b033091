package dev.sluice.proxy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;
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
    void decideRefusesPlainHttpToAnInspectedHostAsTheListenerDoes(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("p.yaml"), """
                version: 1
                extensions:
                  agent:
                    allow:
                      - host: llm.test
                inspect:
                  llm.test: {}
                network:
                  hosts:
                    llm.test: 127.0.0.1
                """);
        Run plain = sluice("decide", "--policy", file.toString(), "--extension", "agent", "http://llm.test/v1/x");
        assertThat(plain.code()).as(plain.out()).isEqualTo(3);
        assertThat(plain.out()).contains("deny tls_required rule=inspect");
        Run tls = sluice("decide", "--policy", file.toString(), "--extension", "agent", "https://llm.test/v1/x");
        assertThat(tls.out()).contains("allow allowlisted");
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

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"bad:name", "with space", "ünicode", ".dot", "a/b",
            "x2345678901234567890123456789012345678901234567890123456789012345"})
    void tokenNewRejectsNamesThatAreNotExtensionNames(String name) {
        Run run = sluice("token", "new", name);
        assertThat(run.code()).isEqualTo(2);
        assertThat(run.out()).doesNotContain("token:");
        assertThat(run.err()).contains("is not a valid extension name (expected: " + Extension.NAME_PATTERN + ")");
    }

    /** Every command and subcommand answers --help with its usage on standard output and exit 0. */
    @Test
    void everySubcommandAnswersHelp() {
        List<String> paths = new ArrayList<>();
        collect(new CommandLine(SluiceCli.class), paths);
        assertThat(paths).contains("sluice run", "sluice env", "sluice token new", "sluice ca export",
                "sluice audit verify", "sluice pins reset");
        for (String path : paths) {
            List<String> args = new ArrayList<>(List.of(path.split(" ")).subList(1, path.split(" ").length));
            args.add("--help");
            Run run = sluice(args.toArray(String[]::new));
            assertThat(run.code()).as(path + " --help: " + run.err()).isZero();
            assertThat(run.out()).as(path + " --help").startsWith("Usage: " + path);
            assertThat(run.err()).as(path + " --help").isEmpty();
        }
        assertThat(sluice("run", "--help").out()).contains("--data-dir=DIR").contains("SLUICE_DATA_DIR")
                .contains("--shutdown-grace-seconds");
    }

    private static void collect(CommandLine cli, List<String> paths) {
        paths.add(cli.getCommandSpec().qualifiedName());
        cli.getSubcommands().values().stream().distinct().forEach(sub -> collect(sub, paths));
    }

    @Test
    void envNamesTheCaFileOfItsDataDirAndWarnsWhenItHadToCreateIt(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("data");
        Run first = sluice("env", "--extension", "default", "--data-dir", data.toString());
        assertThat(first.code()).as(first.err()).isZero();
        Path caFile = data.resolve("ca.crt.pem").toAbsolutePath();
        assertThat(first.err()).contains("warning: no CA in " + data.toAbsolutePath())
                .contains("the same --data-dir (or SLUICE_DATA_DIR) as `sluice run`");
        assertThat(first.out()).contains("# CA certificate: " + caFile + " (data dir " + data.toAbsolutePath() + ")")
                .contains("export NODE_EXTRA_CA_CERTS='" + caFile + "'")
                .contains("export http_proxy='http://127.0.0.1:3128'")
                .contains("export HTTP_PROXY='http://127.0.0.1:3128'");

        Run second = sluice("env", "--extension", "default", "--data-dir", data.toString());
        assertThat(second.err()).isEmpty();
        assertThat(second.out()).isEqualTo(first.out());
        assertThat(sluice("ca", "show", "--data-dir", data.toString()).out()).contains("file:      " + data.resolve("ca.crt.pem"));
    }

    @Test
    void envWithoutATokenSaysThatItsProxyUrlsCarryTheTokenPlaceholder(@TempDir Path dir) throws Exception {
        Path policy = dir.resolve("policy.yaml");
        Files.writeString(policy, """
                version: 1
                extensions:
                  github:
                    auth: { token_sha256: "%s" }
                """.formatted("ab".repeat(32)));
        Path data = dir.resolve("data");
        Run without = sluice("env", "--extension", "github", "--policy", policy.toString(), "--data-dir", data.toString());
        assertThat(without.code()).as(without.err()).isZero();
        assertThat(without.out()).contains("export http_proxy='http://github:<token>@127.0.0.1:3128'");
        assertThat(without.err()).contains("warning: no --token given").contains("407 unknown_extension");

        Run with = sluice("env", "--extension", "github", "--token", "t0k3n", "--policy", policy.toString(),
                "--data-dir", data.toString());
        assertThat(with.code()).as(with.err()).isZero();
        assertThat(with.out()).contains("export http_proxy='http://github:t0k3n@127.0.0.1:3128'");
        assertThat(with.err()).doesNotContain("--token");
    }
}
