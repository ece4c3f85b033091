package dev.sluice.proxy.transparent;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** The sockaddr layouts that SO_ORIGINAL_DST and IP6T_SO_ORIGINAL_DST return (family in host order). */
class OriginalDestinationTest {

    @Test
    void sockaddrIn() {
        byte[] raw = {2, 0, 0x01, (byte) 0xbb, 10, (byte) 200, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
        assertThat(OriginalDestination.parseSockaddr(ByteBuffer.wrap(raw)))
                .isEqualTo(new InetSocketAddress("10.200.1.1", 443));
    }

    @Test
    void sockaddrIn6() {
        byte[] raw = new byte[28];
        raw[0] = 10;
        raw[2] = 0x1f;
        raw[3] = (byte) 0x90; // 8080
        raw[8] = 0x20;
        raw[9] = 0x01;
        raw[10] = 0x0d;
        raw[11] = (byte) 0xb8;
        raw[23] = 1;
        assertThat(OriginalDestination.parseSockaddr(ByteBuffer.wrap(raw)))
                .isEqualTo(new InetSocketAddress("2001:db8::1", 8080));
    }

    @Test
    void otherFamiliesAreNotAddresses() {
        assertThat(OriginalDestination.parseSockaddr(ByteBuffer.wrap(new byte[16]))).isNull();
        assertThat(OriginalDestination.parseSockaddr(ByteBuffer.wrap(new byte[] {1, 0, 0, 0, 0, 0, 0, 0}))).isNull();
    }
}
