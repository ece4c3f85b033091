package dev.sluice.proxy.dns;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.testing.EmbeddedContext;
import dev.sluice.proxy.testing.InetEmbeddedChannel;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.DatagramPacket;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import io.netty.handler.codec.dns.TcpDnsQueryDecoder;
import io.netty.handler.codec.dns.TcpDnsResponseEncoder;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Fuzzes the DNS responder of the transparent sandboxes (RFC 1035 messages, over UDP and over TCP with
 * the two-byte length prefix of RFC 7766) through its real codecs on an EmbeddedChannel: any datagram
 * or stream gives at most one answer per query, each answer carries the query's id, and nothing
 * escapes as an exception. Seeds: {@code DnsQueryFuzzTestInputs/} (A, AAAA, TXT queries for allowed
 * and refused names, truncated and oversized ones).
 */
class DnsQueryFuzzTest {

    private static final InetSocketAddress SANDBOX = new InetSocketAddress("10.0.0.2", 40000);
    private static final InetSocketAddress RESPONDER = new InetSocketAddress("10.0.0.1", 53);
    private static final ProxyContext CONTEXT = EmbeddedContext.create("""
            version: 1
            extensions:
              ext:
                sources: ["10.0.0.2/32"]
                allow:
                  - host: allowed.test
                  - host: "*.wild.test"
            """);

    @FuzzTest(maxDuration = "30s")
    void udp(byte[] message) throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new DatagramDnsQueryDecoder(), new DatagramDnsResponseEncoder(),
                new DnsQueryHandler(CONTEXT, InetAddress.getByName("10.0.0.1")));
        try {
            ch.writeInbound(new DatagramPacket(Unpooled.wrappedBuffer(message), RESPONDER, SANDBOX));
            ch.checkException();
            int answers = 0;
            for (Object out; (out = ch.readOutbound()) != null; ) {
                DatagramPacket packet = (DatagramPacket) out;
                try {
                    answers++;
                    assertThat(packet.recipient()).isEqualTo(SANDBOX);
                    assertThat(packet.content().readableBytes()).isGreaterThanOrEqualTo(12);
                    assertThat(packet.content().getUnsignedShort(0)).as("answer id = query id")
                            .isEqualTo(((message[0] & 0xff) << 8) | (message[1] & 0xff));
                } finally {
                    packet.release();
                }
            }
            assertThat(answers).isLessThanOrEqualTo(1);
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    @FuzzTest(maxDuration = "30s")
    void tcp(byte[] stream) throws Exception {
        EmbeddedChannel ch = new InetEmbeddedChannel(RESPONDER, SANDBOX);
        ch.pipeline().addLast(new TcpDnsQueryDecoder(), new TcpDnsResponseEncoder(),
                new DnsQueryHandler(CONTEXT, InetAddress.getByName("10.0.0.1")));
        try {
            ch.writeInbound(Unpooled.wrappedBuffer(stream));
            ch.checkException();
            for (Object out; (out = ch.readOutbound()) != null; ) {
                ByteBuf buf = (ByteBuf) out;
                try {
                    assertThat(buf.readableBytes()).as("length prefix + header").isGreaterThanOrEqualTo(14);
                    assertThat(buf.getUnsignedShort(0)).as("length prefix").isEqualTo(buf.readableBytes() - 2);
                } finally {
                    buf.release();
                }
            }
        } finally {
            ch.finishAndReleaseAll();
        }
    }
}
