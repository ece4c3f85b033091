package dev.sluice.hosts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CanonicalHostTest {

    @ParameterizedTest
    @CsvSource({
        "api.anthropic.com, DNS",
        "localhost, DNS",
        "xn--bcher-kva.example, DNS",
        "_dmarc.example.com, DNS",
        "10.0.0.1, IPV4",
        "0.0.0.0, IPV4",
        "255.255.255.255, IPV4",
        "::1, IPV6",
        "::, IPV6",
        "2001:db8::1, IPV6",
        "2001:db8:0:1:1:1:1:1, IPV6",
        "2001:0:0:1::1, IPV6",
        "fe80::1:0:0:1, IPV6",
        "::ffff:127.0.0.1, IPV6",
        "::ffff:169.254.169.254, IPV6"
    })
    void acceptsCanonicalHosts(String host, CanonicalHost.Kind kind) {
        CanonicalHost h = CanonicalHost.of(host);
        assertThat(h.text()).isEqualTo(host);
        assertThat(h.kind()).isEqualTo(kind);
    }

    @ParameterizedTest
    @ValueSource(strings = {"::1", "2001:db8::1", "2001:db8:0:1:1:1:1:1", "1:0:0:2::3", "1::2:0:0:3:4", "1:2:3:4:5:6:7:8"})
    void rfc5952MatchesTheParsedAddress(String text) throws Exception {
        byte[] bytes = InetAddress.getByName(text).getAddress();
        assertThat(IpAddresses.formatIpv6(bytes)).isEqualTo(text);
    }

    @ParameterizedTest
    @CsvSource({
        "'1:0:0:2:0:0:0:3', '1:0:0:2::3'",
        "'2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'",
        "'2001:db8::0:1', '2001:db8::1'",
        "'1:0:0:2:0:0:3:4', '1::2:0:0:3:4'",
        "'2001:DB8::1', ''",
        "'::ffff:7f00:1', '::ffff:127.0.0.1'",
        "'0:0:0:0:0:ffff:a00:1', '::ffff:10.0.0.1'"
    })
    void nonCanonicalIpv6NamesTheCanonicalForm(String given, String canonical) {
        var thrown = assertThatThrownBy(() -> CanonicalHost.of(given)).isInstanceOf(IllegalArgumentException.class);
        if (!canonical.isEmpty()) {
            thrown.hasMessageContaining("'" + canonical + "'");
        }
    }
}
