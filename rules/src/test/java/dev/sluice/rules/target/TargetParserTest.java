package dev.sluice.rules.target;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.hosts.CanonicalHost;
import java.net.Inet4Address;
import java.net.Inet6Address;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class TargetParserTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', textBlock = """
            example.com                  | example.com
            EXAMPLE.Com                  | example.com
            example.com.                 | example.com
            api.github.com               | api.github.com
            _dmarc.example.com           | _dmarc.example.com
            bücher.example               | xn--bcher-kva.example
            BÜCHER.example.              | xn--bcher-kva.example
            example\u3002com             | example.com
            2852039166                   | 169.254.169.254
            169.254.43518                | 169.254.169.254
            169.16689662                 | 169.254.169.254
            0xa9.0xfe.0xa9.0xfe          | 169.254.169.254
            0251.0376.0251.0376          | 169.254.169.254
            0xa9fea9fe                   | 169.254.169.254
            0XA9FEA9FE                   | 169.254.169.254
            0177.0.0.1                   | 127.0.0.1
            127.1                        | 127.0.0.1
            0x7f.1                       | 127.0.0.1
            127.0.0.1.                   | 127.0.0.1
            0                            | 0.0.0.0
            010.0.0.1                    | 8.0.0.1
            4294967295                   | 255.255.255.255
            \uff11\uff12\uff17.0.0.1     | 127.0.0.1
            """)
    void canonicalNames(String input, String canonical) throws Exception {
        Target t = TargetParser.canonicalHost(input, 443);
        assertThat(t.host()).isEqualTo(canonical);
        // One canonical form: what the rules parse, the certs module's check (hosts) takes as it is.
        assertThat(CanonicalHost.of(t.host()).text()).isEqualTo(canonical);
        assertThat(t.port()).isEqualTo(443);
        if (Character.isDigit(canonical.charAt(0))) {
            assertThat(t.address()).isInstanceOf(Inet4Address.class);
            assertThat(t.address().getHostAddress()).isEqualTo(canonical);
        } else {
            assertThat(t.address()).isNull();
        }
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', textBlock = """
            [::1]                         | ::1
            ::1                           | ::1
            [2001:DB8:0:0:0:0:0:1]        | 2001:db8::1
            [2001:db8:0:0:1:0:0:1]        | 2001:db8::1:0:0:1
            [2001:0db8:0000:0000:0001:0000:0000:0000] | 2001:db8:0:0:1::
            [0:0:0:0:0:0:0:0]             | ::
            [::ffff:169.254.169.254]      | ::ffff:169.254.169.254
            [::ffff:a9fe:a9fe]            | ::ffff:169.254.169.254
            [fd00:ec2::254]               | fd00:ec2::254
            [2001:db8::0:1]               | 2001:db8::1
            [1:0:0:2:0:0:0:3]             | 1:0:0:2::3
            [1:0:2:3:4:5:6:7]             | 1:0:2:3:4:5:6:7
            """)
    void ipv6Literals(String input, String canonical) throws Exception {
        Target t = TargetParser.canonicalHost(input, 80);
        assertThat(t.host()).isEqualTo(canonical);
        assertThat(CanonicalHost.of(t.host()).text()).isEqualTo(canonical);
        assertThat(CanonicalHost.of(t.host()).kind()).isEqualTo(CanonicalHost.Kind.IPV6);
        assertThat(t.address()).isInstanceOf(Inet6Address.class);
        assertThat(t.isIpv6Literal()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "", ".", "example.com..", "a..b", "exa mple.com", "exa%2fmple.com", "user@example.com", "exa/mple.com",
        "exa\\mple.com", "1.2.3.4.5", "256.1.1.1", "1.2.3.256", "127.0.0.0x", "example.0x1", "example.123",
        "08.0.0.1", "0x.1.1.1", "1.2.3.09", "4294967296", "[::1", "[fe80::1%eth0]", "fe80::1%25eth0",
        "[v1.fe]", "[1::2::3]", "[12345::]", "[1:2:3:4:5:6:7:8:9]", "[::1.2.3]", "[:1]", "[1:]",
        "a\u0000b.com", "xn--.com", "\u0000", "-a.example", "a-.example", "a.-b.example"
    })
    void malformedHosts(String input) {
        assertThatThrownBy(() -> TargetParser.canonicalHost(input, 443)).isInstanceOf(MalformedTargetException.class);
    }

    @Test
    void labelAndNameLengths() throws Exception {
        String label63 = "a".repeat(63);
        assertThat(TargetParser.canonicalHost(label63 + ".com", 443).host()).isEqualTo(label63 + ".com");
        assertThatThrownBy(() -> TargetParser.canonicalHost("a".repeat(64) + ".com", 443))
                .isInstanceOf(MalformedTargetException.class);
        String longName = (label63 + ".").repeat(4) + "com"; // 259 characters
        assertThatThrownBy(() -> TargetParser.canonicalHost(longName, 443)).isInstanceOf(MalformedTargetException.class);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            api.github.com:443           | api.github.com          | 443
            API.GitHub.com.:443          | api.github.com          | 443
            [2001:db8::1]:8443           | 2001:db8::1             | 8443
            2852039166:443               | 169.254.169.254         | 443
            127.1:22                     | 127.0.0.1               | 22
            example.com:65535            | example.com             | 65535
            example.com:00443            | example.com             | 443
            """)
    void authorityForm(String input, String host, int port) throws Exception {
        Target t = TargetParser.parseAuthority(input);
        assertThat(t.host()).isEqualTo(host);
        assertThat(t.port()).isEqualTo(port);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:443x", "example.com:+443",
        "example.com:123456", "::1:443", "2001:db8::1:443", "[::1]", "[::1]443", "[::1]:", "user:pw@example.com:443",
        "example.com :443", ":443", "[fe80::1%25eth0]:443", "example.com:４４３", "exämple.com:443"
    })
    void malformedAuthority(String input) {
        assertThatThrownBy(() -> TargetParser.parseAuthority(input)).isInstanceOf(MalformedTargetException.class);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            http://example.com/a/b?c=d       | example.com | 80   | /a/b?c=d  | /a/b
            HTTP://Example.COM               | example.com | 80   | /         | /
            http://example.com?q=1           | example.com | 80   | /?q=1     | /
            http://example.com:8080/x#frag   | example.com | 8080 | /x        | /x
            http://example.com:/x            | example.com | 80   | /x        | /x
            http://[::1]:8080/               | ::1         | 8080 | /         | /
            http://[2001:db8::1]/p           | 2001:db8::1 | 80   | /p        | /p
            http://0x7f.1/latest             | 127.0.0.1   | 80   | /latest   | /latest
            http://example.com./a?b#c?d      | example.com | 80   | /a?b      | /a
            """)
    void absoluteForm(String input, String host, int port, String pathAndQuery, String path) throws Exception {
        HttpTarget t = TargetParser.parseAbsoluteForm(input);
        assertThat(t.scheme()).isEqualTo("http");
        assertThat(t.target().host()).isEqualTo(host);
        assertThat(t.target().port()).isEqualTo(port);
        assertThat(t.pathAndQuery()).isEqualTo(pathAndQuery);
        assertThat(t.path()).isEqualTo(path);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "/relative", "https://example.com/", "ftp://example.com/", "http:/example.com/", "http://", "http:///x",
        "http://example.com:99999/", "http://::1/", "http://[::1/", "http://[::1]x/", "http://exa mple.com/",
        "http://example.com/a b", "http://example.com\\@evil.com/", "example.com:80", "*", "http://ex%41mple.com/"
    })
    void malformedAbsoluteForm(String input) {
        assertThatThrownBy(() -> TargetParser.parseAbsoluteForm(input)).isInstanceOf(MalformedTargetException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "http://allowed.com@evil.com/", "http://user:s3cr3tpass@example.com/", "http://s3cr3tpass@[::1]/",
        "http://a:s3cr3tpass@b:c@example.com/"
    })
    void userinfoIsRefusedAndNeverEchoed(String input) {
        assertThatThrownBy(() -> TargetParser.parseAbsoluteForm(input))
                .isInstanceOf(MalformedTargetException.class)
                .hasMessageContaining("userinfo")
                .hasMessageNotContaining("s3cr3tpass")
                .hasMessageNotContaining("allowed.com");
    }

    @Test
    void aUrlGivenAsAConnectAuthorityIsCalledAUrl() {
        assertThatThrownBy(() -> TargetParser.parseAuthority("http://api.test:18080/"))
                .isInstanceOf(MalformedTargetException.class)
                .hasMessageContaining("a URL, not an authority (expected: host:port)")
                .hasMessageNotContaining("IPv6");
    }

    @Test
    void authorityUserinfoNotEchoed() {
        assertThatThrownBy(() -> TargetParser.parseAuthority("bob:s3cr3tpass@example.com:443"))
                .isInstanceOf(MalformedTargetException.class)
                .hasMessageNotContaining("s3cr3tpass");
    }

    @Test
    void canonicalHostPortRange() {
        assertThatThrownBy(() -> TargetParser.canonicalHost("example.com", 0)).isInstanceOf(MalformedTargetException.class);
        assertThatThrownBy(() -> TargetParser.canonicalHost("example.com", 65536)).isInstanceOf(MalformedTargetException.class);
    }

    @Test
    void targetAuthorityForms() throws Exception {
        assertThat(TargetParser.parseAuthority("[2001:db8::1]:443").authority()).isEqualTo("[2001:db8::1]:443");
        assertThat(TargetParser.parseAuthority("Example.com:443").authority()).isEqualTo("example.com:443");
    }
}
