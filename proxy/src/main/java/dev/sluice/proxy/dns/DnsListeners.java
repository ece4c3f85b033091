package dev.sluice.proxy.dns;

import dev.sluice.proxy.transport.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import java.net.InetSocketAddress;
import java.util.List;

/**
 * Binds the DNS responder's two sockets, UDP and TCP, on one address and port. With port 0 the UDP
 * socket takes an ephemeral port and the TCP socket must get the same number, which another process
 * may hold for TCP: then both are tried again on a new port, up to {@value #ATTEMPTS} times.
 */
public final class DnsListeners {

    /** Tries for a common free port when port 0 is asked for. */
    static final int ATTEMPTS = 10;

    private DnsListeners() {
    }

    /**
     * Binds UDP then TCP at {@code address}.
     *
     * @param initializer the pipeline of the UDP socket and of each TCP connection ({@link DnsChannelInitializer})
     * @return the bound UDP channel, then the TCP listener; close both to stop
     * @throws Exception when the address cannot be bound (for port 0: after {@value #ATTEMPTS} tries)
     */
    public static List<Channel> bind(EventLoopGroup group, Transport transport, ChannelHandler initializer,
                                     InetSocketAddress address) throws Exception {
        int attempts = address.getPort() == 0 ? ATTEMPTS : 1;
        for (int i = 1; ; i++) {
            Channel udp = new Bootstrap().group(group).channel(transport.datagramChannel()).handler(initializer)
                    .bind(address).sync().channel();
            try {
                Channel tcp = new ServerBootstrap().group(group).channel(transport.serverChannel())
                        .option(ChannelOption.SO_BACKLOG, 128)
                        .option(ChannelOption.SO_REUSEADDR, true)
                        .childHandler(initializer)
                        .bind(udp.localAddress()).sync().channel();
                return List.of(udp, tcp);
            } catch (Exception e) {
                udp.close().sync();
                if (i >= attempts) {
                    throw e;
                }
            }
        }
    }
}
