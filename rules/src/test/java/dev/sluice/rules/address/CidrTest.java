package dev.sluice.rules.address;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.hosts.IpAddresses;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class CidrTest {

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = '|', textBlock = """
            10.0.0.0/8             | 10.0.0.0/8
            10.1.2.3               | 10.1.2.3/32
            0.0.0.0/0              | 0.0.0.0/0
            fd00::/8               | fd00::/8
            2001:DB8::/32          | 2001:db8::/32
            ::1                    | ::1/128
            ::/0                   | ::/0
            ::ffff:10.0.0.0/104    | 10.0.0.0/8
            ::ffff:10.1.2.3/128    | 10.1.2.3/32
            ::ffff:a01:200/120     | 10.1.2.0/24
            """)
    void parses(String text, String canonical) {
        assertThat(Cidr.parse(text).toString()).isEqualTo(canonical);
    }

    @Test
    void mappedPrefixEqualsIpv4Prefix() {
        assertThat(Cidr.parse("::ffff:10.0.0.0/104")).isEqualTo(Cidr.parse("10.0.0.0/8"));
        assertThat(Cidr.parse("::ffff:10.0.0.0/104").isIpv4()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/", "10.0.0/8", "010.0.0.0/8", "10.0.0.0/8/8",
        "fd00::1/8", "fd00::/129", "[fd00::]/8", "fe80::%eth0/64", "example.com/8", "", "10.0.0.0/ 8", "10.0.0.0/0x8",
        "::ffff:0:0/96", "::ffff:0.0.0.0/96", "::ffff:10.0.0.0/103", "::ffff:0:0/100"
    })
    void refuses(String text) {
        assertThatThrownBy(() -> Cidr.parse(text)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void hostBitsMessageSuggestsTheNetwork() {
        assertThatThrownBy(() -> Cidr.parse("10.1.2.3/8"))
                .hasMessage("10.1.2.3/8: host bits set (expected: 10.0.0.0/8)");
    }

    @Test
    void mappedWideningMessage() {
        assertThatThrownBy(() -> Cidr.parse("::ffff:0:0/96")).hasMessageContaining("shorter than /104");
    }

    @ParameterizedTest(name = "{0} contains {1}: {2}")
    @CsvSource(delimiter = '|', textBlock = """
            10.0.0.0/8        | 10.255.1.2         | true
            10.0.0.0/8        | 11.0.0.0           | false
            10.0.0.0/8        | ::ffff:10.1.2.3    | true
            10.0.0.0/8        | ::10.1.2.3         | false
            172.16.0.0/12     | 172.31.0.1         | true
            172.16.0.0/12     | 172.32.0.1         | false
            0.0.0.0/0         | 1.2.3.4            | true
            0.0.0.0/0         | ::1                | false
            ::/0              | 2001:db8::1        | true
            ::/0              | ::ffff:1.2.3.4     | false
            ::/0              | 1.2.3.4            | false
            fd00::/8          | fd00:ec2::254      | true
            fd00::/8          | fe00::1            | false
            2001:db8::/33     | 2001:db8:7fff::1   | true
            2001:db8::/33     | 2001:db8:8000::1   | false
            10.1.2.3/32       | 10.1.2.3           | true
            10.1.2.3/32       | 10.1.2.4           | false
            """)
    void contains(String cidr, String address, boolean expected) {
        assertThat(Cidr.parse(cidr).contains(IpAddresses.parseStrict(address))).isEqualTo(expected);
    }
}
