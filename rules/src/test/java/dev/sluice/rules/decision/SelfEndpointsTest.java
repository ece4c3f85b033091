package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.hosts.IpAddresses;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class SelfEndpointsTest {

    private static final SelfEndpoints SELF = new SelfEndpoints(
            List.of(new InetSocketAddress(IpAddresses.parseStrict("127.0.0.1"), 3128),
                    new InetSocketAddress(IpAddresses.parseStrict("0.0.0.0"), 9901),
                    new InetSocketAddress(IpAddresses.parseStrict("10.200.0.1"), 15001),
                    new InetSocketAddress(IpAddresses.parseStrict("::"), 8053)),
            Set.of(IpAddresses.parseStrict("127.0.0.1"), IpAddresses.parseStrict("10.0.0.5"),
                    IpAddresses.parseStrict("10.200.0.1"), IpAddresses.parseStrict("2001:db8::5")));

    @ParameterizedTest(name = "{0}:{1} self={2}")
    @CsvSource(delimiter = '|', textBlock = """
            127.0.0.1         | 3128  | true
            ::ffff:127.0.0.1  | 3128  | true
            127.0.0.2         | 3128  | false
            10.0.0.5          | 3128  | false
            127.0.0.1         | 3129  | false
            0.0.0.0           | 3128  | true
            ::                | 3128  | true
            10.0.0.5          | 9901  | true
            127.0.0.9         | 9901  | true
            ::1               | 9901  | true
            2001:db8::5       | 9901  | true
            8.8.8.8           | 9901  | false
            10.200.0.1        | 15001 | true
            10.200.0.2        | 15001 | false
            127.0.0.1         | 15001 | false
            10.0.0.5          | 8053  | true
            ::1               | 8053  | true
            2001:db8::6       | 8053  | false
            8.8.8.8           | 443   | false
            """)
    void isSelf(String address, int port, boolean expected) {
        assertThat(SELF.isSelf(IpAddresses.parseStrict(address), port)).isEqualTo(expected);
    }
}
