package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.target.Target;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code include: [files]}: fragments merged under the same validation, errors naming the fragment. */
class PolicyIncludeTest {

    @TempDir
    Path dir;

    private static final String MAIN = """
            version: 1
            extensions:
              a:
                allow:
                  - host: own.test
              b:
                allow:
                  - host: b.test
            groups:
              base:
                - host: base.test
            %s
            """;

    private Path write(String name, String text) throws Exception {
        Path p = dir.resolve(name);
        Files.createDirectories(p.getParent());
        Files.writeString(p, text);
        return p;
    }

    private Path main(String include) throws Exception {
        return write("policy.yaml", MAIN.formatted(include));
    }

    private static List<String> errors(Path file) {
        try {
            PolicyLoader.load(file);
        } catch (PolicyException e) {
            return e.errors().stream().map(PolicyError::toString).toList();
        }
        throw new AssertionError("loaded: " + file);
    }

    private static Verdict decide(Policy p, String ext, String host, String method, String path) {
        return Decider.decide(p, p.extension(ext).orElseThrow(), new Target(host, 80, null),
                new RequestInfo(method, path)).verdict();
    }

    @Test
    void fragmentsAddRulesAndGroupsAfterTheExtensionsOwn() throws Exception {
        write("overlays/suggested.yaml", """
                groups:
                  cdn:
                    - host: "*.cdn.test"
                extensions:
                  a:
                    allow:
                      - host: api.test
                        methods: [GET]
                        paths: ["/v1/**"]
                    groups: [cdn, base]
                include: [more.yaml]
                """);
        write("overlays/more.yaml", """
                extensions:
                  b:
                    allow:
                      - host: more.test
                """);
        Path main = main("include: [overlays/suggested.yaml]");
        Policy p = PolicyLoader.load(main);
        assertThat(p.includes()).containsExactly(dir.resolve("overlays/suggested.yaml"), dir.resolve("overlays/more.yaml"));
        assertThat(p.extension("a").orElseThrow().allow()).extracting(Rule::id).containsExactly(
                "extensions.a.allow[0]", "overlays/suggested.yaml:extensions.a.allow[0]",
                "overlays/suggested.yaml:groups.cdn[0]", "groups.base[0]");
        assertThat(decide(p, "a", "api.test", "GET", "/v1/x")).isEqualTo(Verdict.ALLOW);
        assertThat(decide(p, "a", "api.test", "POST", "/v1/x")).isEqualTo(Verdict.DENY);
        assertThat(decide(p, "a", "x.cdn.test", "GET", "/")).isEqualTo(Verdict.ALLOW);
        assertThat(decide(p, "b", "x.cdn.test", "GET", "/")).isEqualTo(Verdict.DENY);
        assertThat(decide(p, "b", "more.test", "GET", "/")).isEqualTo(Verdict.ALLOW);
        // The fingerprint covers the fragments: editing one changes sha256Hex.
        assertThat(p.sha256Hex()).isEqualTo(PolicyLoader.fingerprint(main, p.includes()));
        String before = p.sha256Hex();
        write("overlays/more.yaml", "extensions: {b: {allow: [{host: other.test}]}}\n");
        assertThat(PolicyLoader.fingerprint(main, p.includes())).isNotEqualTo(before);
    }

    @Test
    void errorsInAFragmentNameTheFragmentWithLineAndColumn() throws Exception {
        Path frag = write("bad.yaml", """
                extensions:
                  a:
                    allow:
                      - host: api.test
                        ports: [70000]
                """);
        assertThat(errors(main("include: [bad.yaml]"))).containsExactly(
                frag + ":5:17: bad.yaml:extensions.a.allow[0].ports[0]: 70000 (expected: 1..65535)");
    }

    @Test
    void aFragmentHoldsOnlyRulesAndGroupsForExtensionsThePolicyDefines() throws Exception {
        Path frag = write("wide.yaml", """
                mode: report
                network:
                  allow_private: ["0.0.0.0/0"]
                extensions:
                  a:
                    auth: { token_sha256: "%s" }
                    deny: []
                  ghost:
                    allow: [{host: x.test}]
                groups:
                  base:
                    - host: evil.test
                """.formatted("0".repeat(64)));
        List<String> errors = errors(main("include: [wide.yaml]"));
        assertThat(errors).containsExactly(
                frag + ":1:1: mode: not allowed in a fragment (expected one of: include, groups, extensions; "
                        + "every other section belongs to the main policy file)",
                frag + ":2:1: network: not allowed in a fragment (expected one of: include, groups, extensions; "
                        + "every other section belongs to the main policy file)",
                frag + ":6:5: extensions.a.auth: not allowed in a fragment (expected one of: allow, groups; "
                        + "identity and deny rules belong to the main policy file)",
                frag + ":7:5: extensions.a.deny: not allowed in a fragment (expected one of: allow, groups; "
                        + "identity and deny rules belong to the main policy file)",
                frag + ":8:3: extensions.ghost: not defined by the policy (expected one of: a, b; "
                        + "a fragment adds rules to extensions the policy defines)",
                frag + ":11:3: groups.base: already defined (expected: a new group name; a fragment cannot "
                        + "change a group defined elsewhere)");
    }

    @Test
    void aMissingFragmentOrACycleIsAnError() throws Exception {
        Path main = main("include: [nowhere.yaml]");
        assertThat(errors(main)).containsExactly(main + ":12:11: include[0]: cannot read " + dir.resolve("nowhere.yaml")
                + ": NoSuchFileException (expected: an existing, readable policy fragment)");

        Path one = write("one.yaml", "include: [two.yaml]\n");
        Path two = write("two.yaml", "include: [one.yaml]\n");
        assertThat(errors(main("include: [one.yaml]"))).containsExactly(two + ":1:11: include[0]: one.yaml is already "
                + "being included (cycle: one.yaml -> two.yaml -> one.yaml) (expected: fragments that include no "
                + "file that includes them)");
        assertThat(one).exists();

        write("self.yaml", "include: [self.yaml]\n");
        assertThat(errors(main("include: [self.yaml]"))).singleElement().asString()
                .contains("cycle: self.yaml -> self.yaml");
        assertThat(errors(write("loop.yaml", MAIN.formatted("include: [loop.yaml]")))).singleElement().asString()
                .contains("cycle: loop.yaml -> loop.yaml");
    }

    @Test
    void approvalsAreValidatedAndTheirOverlayMustBeIncluded() throws Exception {
        write("approved.yaml", "");
        Policy ok = PolicyLoader.load(main("""
                include: [approved.yaml]
                approvals:
                  backend: http://127.0.0.1:9/approve
                  timeout: 10s
                  scopes: [once, always]
                  overlay: approved.yaml"""));
        assertThat(ok.approvals().webhook().toString()).isEqualTo("http://127.0.0.1:9/approve");
        assertThat(ok.approvals().timeout()).hasSeconds(10);
        assertThat(ok.approvals().scopes()).containsExactlyInAnyOrder("once", "always");
        assertThat(ok.approvals().overlay()).isEqualTo(dir.resolve("approved.yaml"));
        Path bad = main("""
                approvals:
                  backend: mailto:ops@example.org
                  timeout: 10m
                  scopes: [once, forever]
                  overlay: approved.yaml""");
        assertThat(errors(bad)).containsExactly(
                bad + ":13:12: approvals.backend: mailto:ops@example.org (expected: an http:// or https:// "
                        + "webhook URL, or admin)",
                bad + ":14:12: approvals.timeout: 10m (expected: more than 0, at most 5m)",
                bad + ":15:18: approvals.scopes[1]: forever (expected: once, session or always)",
                bad + ":16:12: approvals.overlay: approved.yaml is not in include (expected: a fragment the policy "
                        + "includes, so that the rules approved with scope always load)");
        Path noOverlay = main("approvals: {backend: \"https://approve.example.org/q\", scopes: [always]}");
        assertThat(errors(noOverlay)).singleElement().asString().contains("approvals.overlay: missing");
        Policy admin = PolicyLoader.load(main("""
                listen: {proxy: "127.0.0.1:3128", admin: "127.0.0.1:9090"}
                approvals: {backend: admin, scopes: [once, session]}"""));
        assertThat(admin.approvals().backend()).isEqualTo(ApprovalSettings.Backend.ADMIN);
        assertThat(admin.approvals().webhook()).isNull();
        assertThat(ok.approvals().backend()).isEqualTo(ApprovalSettings.Backend.WEBHOOK);
        Path notUrl = main("approvals: {backend: \"ftp://approve.example.org/q\"}");
        assertThat(errors(notUrl)).singleElement().asString().endsWith("approvals.backend: ftp://approve.example.org/q "
                + "(expected: an http:// or https:// webhook URL, or admin)");
    }
}
