package dev.sluice.rules.policy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The {@code upstream_proxy} section: loading, every error with file:line:column, no_proxy forms, masking. */
class UpstreamProxyPolicyTest {

    @TempDir
    Path dir;

    private Policy load(String section) throws Exception {
        return PolicyLoader.parse("version: 1\nupstream_proxy:\n" + section, "p.yaml");
    }

    @Test
    void aFullSectionLoadsAndNeverShowsTheCredentials() throws Exception {
        Path auth = dir.resolve("auth");
        Files.writeString(auth, "corp-user:pa:ss\n");
        UpstreamProxy up = load("""
                  https: http://proxy.corp.example:3128
                  http: http://[fd00::3]:8080/
                  no_proxy: [internal.example, .corp.example, 10.0.0.0/8, "git.example:22", "[fd00::1]:443"]
                """ + "  auth_file: \"" + auth + "\"\n  connect_by: hostname\n").upstreamProxy();
        assertThat(up.https()).isEqualTo(new UpstreamProxy.Parent("proxy.corp.example", 3128));
        assertThat(up.http()).isEqualTo(new UpstreamProxy.Parent("fd00::3", 8080));
        assertThat(up.connectBy()).isEqualTo(UpstreamProxy.ConnectBy.HOSTNAME);
        assertThat(up.credentials().username()).isEqualTo("corp-user");
        assertThat(up.credentials().password()).isEqualTo("pa:ss");
        assertThat(up.toString()).doesNotContain("pa:ss").contains("***");
        assertThat(up.noProxy()).hasSize(5);
        assertThat(PolicyLoader.parse("version: 1\n", "p.yaml").upstreamProxy()).isEqualTo(UpstreamProxy.NONE);
    }

    @Test
    void noProxyFormsMatchAsCurlAndGoReadThem() throws Exception {
        UpstreamProxy up = load("""
                  https: http://127.0.0.1:3128
                  no_proxy: [internal.example, .corp.example, 10.0.0.0/8, "git.example:22"]
                """).upstreamProxy();
        assertThat(direct(up, "internal.example", 443, null)).isTrue();
        assertThat(direct(up, "a.internal.example", 443, null)).isTrue();
        assertThat(direct(up, "notinternal.example", 443, null)).isFalse();
        assertThat(direct(up, "corp.example", 443, null)).as(".suffix: subdomains only").isFalse();
        assertThat(direct(up, "x.corp.example", 443, null)).isTrue();
        assertThat(direct(up, "10.1.2.3", 443, null)).as("CIDR: an IP literal").isTrue();
        assertThat(direct(up, "db.example", 443, InetAddress.getByName("10.9.9.9"))).as("CIDR: the checked address").isTrue();
        assertThat(direct(up, "db.example", 443, InetAddress.getByName("192.0.2.1"))).isFalse();
        assertThat(direct(up, "git.example", 22, null)).isTrue();
        assertThat(direct(up, "git.example", 443, null)).as(":port narrows").isFalse();
        assertThat(up.parentFor(true, TargetParser.canonicalHost("example.org", 80), null))
                .as("no http parent: plain HTTP goes direct").isNull();
        UpstreamProxy star = load("  https: http://127.0.0.1:3128\n  no_proxy: [\"*\"]\n").upstreamProxy();
        assertThat(direct(star, "anything.example", 443, null)).isTrue();
    }

    private static boolean direct(UpstreamProxy up, String host, int port, InetAddress checked) throws Exception {
        return up.parentFor(false, TargetParser.canonicalHost(host, port), checked) == null;
    }

    @Test
    void everyMistakeIsNamedWithItsLineAndNeverEchoesACredential() throws Exception {
        Path bad = dir.resolve("bad-auth");
        Files.writeString(bad, "no-colon-here\n");
        List<String> errors = PolicyLoaderTest.errors("""
                version: 1
                upstream_proxy:
                  https: https://proxy.corp.example:3128
                  http: http://user:hunter2@proxy.corp.example:3128
                  no_proxy: [".", "10.0.0.0/33", "host:99999"]
                  auth_file: "%s"
                  connect_by: dns
                  socks: x
                """.formatted(bad));
        assertThat(errors).anyMatch(e -> e.startsWith("p.yaml:3:") && e.contains("upstream_proxy.https: TLS to the parent is not supported"))
                .anyMatch(e -> e.startsWith("p.yaml:4:") && e.contains("credentials in the URL"))
                .anyMatch(e -> e.startsWith("p.yaml:5:") && e.contains("upstream_proxy.no_proxy[0]"))
                .anyMatch(e -> e.startsWith("p.yaml:5:") && e.contains("upstream_proxy.no_proxy[1]"))
                .anyMatch(e -> e.startsWith("p.yaml:5:") && e.contains("upstream_proxy.no_proxy[2]"))
                .anyMatch(e -> e.startsWith("p.yaml:6:") && e.contains("not one line of user:password"))
                .anyMatch(e -> e.startsWith("p.yaml:7:") && e.contains("connect_by: dns (expected: address or hostname)"))
                .anyMatch(e -> e.startsWith("p.yaml:8:") && e.contains("upstream_proxy.socks: unknown key"));
        assertThat(String.join("\n", errors)).doesNotContain("hunter2").doesNotContain("no-colon-here");
        assertThat(PolicyLoaderTest.errors("version: 1\nupstream_proxy:\n  auth_file: \"" + dir.resolve("absent") + "\"\n"))
                .anyMatch(e -> e.startsWith("p.yaml:3:") && e.contains("upstream_proxy: no parent"))
                .anyMatch(e -> e.startsWith("p.yaml:3:") && e.contains("cannot read"));
        assertThat(PolicyLoaderTest.errors("version: 1\nupstream_proxy:\n  https: http://proxy.corp.example\n"))
                .anyMatch(e -> e.startsWith("p.yaml:3:") && e.contains("expected: http://host:port"));
    }
}
