package dev.sluice.rules.address;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.hosts.IpAddresses;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AddressClassifierTest {

    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource(delimiter = '|', textBlock = """
            8.8.8.8                 | PUBLIC
            1.1.1.1                 | PUBLIC
            0.0.0.0                 | UNSPECIFIED
            0.1.2.3                 | RESERVED
            127.0.0.1               | LOOPBACK
            127.255.255.254         | LOOPBACK
            10.0.0.1                | PRIVATE
            172.16.0.1              | PRIVATE
            172.31.255.255          | PRIVATE
            172.32.0.1              | PUBLIC
            172.15.255.255          | PUBLIC
            192.168.1.1             | PRIVATE
            169.254.169.254         | METADATA
            169.254.170.2           | METADATA
            100.100.100.200         | METADATA
            169.254.1.1             | LINK_LOCAL
            100.64.0.1              | CGNAT
            100.127.255.255         | CGNAT
            100.128.0.1             | PUBLIC
            100.63.255.255          | PUBLIC
            224.0.0.1               | MULTICAST
            239.255.255.255         | MULTICAST
            192.0.0.8               | RESERVED
            192.0.2.1               | RESERVED
            192.88.99.1             | RESERVED
            198.51.100.1            | RESERVED
            203.0.113.1             | RESERVED
            198.18.0.1              | RESERVED
            198.19.255.255          | RESERVED
            198.20.0.1              | PUBLIC
            240.0.0.1               | RESERVED
            255.255.255.255         | RESERVED
            ::                      | UNSPECIFIED
            ::1                     | LOOPBACK
            2606:4700::1111         | PUBLIC
            2a00:1450:4001::200e    | PUBLIC
            fc00::1                 | PRIVATE
            fd12:3456::1            | PRIVATE
            fd00:ec2::254           | METADATA
            fd00:ec2::253           | PRIVATE
            fe80::1                 | LINK_LOCAL
            febf::1                 | LINK_LOCAL
            fec0::1                 | RESERVED
            ff02::1                 | MULTICAST
            ff0e::1                 | MULTICAST
            2001:db8::1             | RESERVED
            3fff::1                 | RESERVED
            100::1                  | RESERVED
            100:0:0:1::1            | RESERVED
            2001:10::1              | RESERVED
            2001:20::1              | RESERVED
            2001:2::1               | RESERVED
            5f00::1                 | RESERVED
            4000::1                 | RESERVED
            ::2:0:0:1               | RESERVED
            ::ffff:0:0:1            | RESERVED
            ::ffff:8.8.8.8          | EMBEDDED_IPV4
            ::ffff:127.0.0.1        | LOOPBACK
            ::ffff:169.254.169.254  | METADATA
            ::ffff:10.1.2.3         | PRIVATE
            ::ffff:0.0.0.0          | UNSPECIFIED
            ::8.8.8.8               | EMBEDDED_IPV4
            ::127.0.0.1             | LOOPBACK
            ::10.0.0.1              | PRIVATE
            ::0.0.0.2               | RESERVED
            64:ff9b::8.8.8.8        | EMBEDDED_IPV4
            64:ff9b::169.254.169.254 | METADATA
            64:ff9b::7f00:1         | LOOPBACK
            64:ff9b:1::a00:1        | PRIVATE
            64:ff9b:1::808:808      | EMBEDDED_IPV4
            64:ff9b:2::1            | RESERVED
            2002:0808:0808::1       | EMBEDDED_IPV4
            2002:a9fe:a9fe::1       | METADATA
            2002:7f00:1::           | LOOPBACK
            2002:c0a8:101::1        | PRIVATE
            2001:0:4136:e378:8000:63bf:f7f7:f7f7 | EMBEDDED_IPV4
            2001:0:4136:e378:8000:63bf:5601:5601 | METADATA
            2001:0:4136:e378:8000:63bf:80ff:fffe | LOOPBACK
            2001:0:4136:e378:8000:63bf:f5ff:fffe | PRIVATE
            """)
    void classifies(String text, AddressClass expected) {
        InetAddress address = IpAddresses.parseStrict(text);
        assertThat(address).as("parse %s", text).isNotNull();
        assertThat(AddressClassifier.classify(address)).isEqualTo(expected);
    }

    @Test
    void mappedAddressAsJavaReturnsItIsClassifiedAsIpv4() throws Exception {
        byte[] mapped = new byte[16];
        mapped[10] = (byte) 0xff;
        mapped[11] = (byte) 0xff;
        mapped[12] = (byte) 169;
        mapped[13] = (byte) 254;
        mapped[14] = (byte) 169;
        mapped[15] = (byte) 254;
        InetAddress javaView = InetAddress.getByAddress(mapped);
        assertThat(javaView).isInstanceOf(Inet4Address.class);
        assertThat(AddressClassifier.classify(javaView)).isEqualTo(AddressClass.METADATA);
        InetAddress v6View = IpAddresses.inet6(mapped);
        assertThat(v6View).isInstanceOf(Inet6Address.class);
        assertThat(AddressClassifier.classify(v6View)).isEqualTo(AddressClass.METADATA);
    }

    @Test
    void labels() {
        assertThat(AddressClass.LINK_LOCAL.label()).isEqualTo("link_local");
        assertThat(AddressClass.EMBEDDED_IPV4.label()).isEqualTo("embedded_ipv4");
    }
}
