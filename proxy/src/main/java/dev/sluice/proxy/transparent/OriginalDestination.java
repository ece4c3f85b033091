package dev.sluice.proxy.transparent;

import io.netty.channel.Channel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.unix.RawUnixChannelOption;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;

/**
 * The address a redirected client meant to reach. With iptables {@code DNAT} or {@code REDIRECT}
 * ({@code docker/sandbox-netns.sh} sets up DNAT) the kernel rewrites the destination to the listener, and
 * the original one is read back from conntrack with {@code getsockopt(SOL_IP, SO_ORIGINAL_DST)}
 * ({@code linux/netfilter_ipv4.h}; {@code IP6T_SO_ORIGINAL_DST} at {@code SOL_IPV6} for IPv6), which
 * Netty's epoll transport exposes as a {@link RawUnixChannelOption}. With {@code TPROXY} (a listener
 * with {@code IP_TRANSPARENT}), or for a client that connected to the listener directly, the socket's
 * own local address already is the destination, and that is what is returned when the socket option
 * is not available (NIO transport, no conntrack entry).
 */
public final class OriginalDestination {

    /** {@code SOL_IP} (= {@code IPPROTO_IP}). */
    static final int SOL_IP = 0;
    /** {@code SOL_IPV6} (= {@code IPPROTO_IPV6}). */
    static final int SOL_IPV6 = 41;
    /** {@code SO_ORIGINAL_DST} and {@code IP6T_SO_ORIGINAL_DST}. */
    static final int SO_ORIGINAL_DST = 80;

    private static final RawUnixChannelOption V4 =
            new RawUnixChannelOption("SO_ORIGINAL_DST", SOL_IP, SO_ORIGINAL_DST, 16);
    private static final RawUnixChannelOption V6 =
            new RawUnixChannelOption("IP6T_SO_ORIGINAL_DST", SOL_IPV6, SO_ORIGINAL_DST, 28);

    private OriginalDestination() {
    }

    /**
     * Returns where {@code channel}'s client was connecting to: the conntrack original destination
     * when the connection was redirected, else the channel's local address.
     *
     * @param channel an accepted TCP channel
     * @return the original destination address and port
     */
    public static InetSocketAddress of(Channel channel) {
        InetSocketAddress local = (InetSocketAddress) channel.localAddress();
        if (channel instanceof EpollSocketChannel) {
            InetSocketAddress original = read(channel, V4);
            if (original == null) {
                original = read(channel, V6);
            }
            if (original != null) {
                return original;
            }
        }
        return local;
    }

    private static InetSocketAddress read(Channel channel, RawUnixChannelOption option) {
        try {
            ByteBuffer raw = channel.config().getOption(option);
            return raw == null ? null : parseSockaddr(raw);
        } catch (RuntimeException e) {
            return null; // ENOENT (no conntrack entry), ENOPROTOOPT, or the other address family
        }
    }

    /**
     * Parses a {@code struct sockaddr_in} (16 bytes) or {@code sockaddr_in6} (28 bytes): family in host
     * byte order (little-endian on the platforms Sluice ships for: AF_INET 2, AF_INET6 10), port and
     * address in network byte order.
     *
     * @return the address, or null when the family is neither
     */
    static InetSocketAddress parseSockaddr(ByteBuffer raw) {
        int family = (raw.get(0) & 0xff) | ((raw.get(1) & 0xff) << 8);
        int port = ((raw.get(2) & 0xff) << 8) | (raw.get(3) & 0xff);
        byte[] address;
        if (family == 2 && raw.limit() >= 8) {
            address = new byte[4];
            for (int i = 0; i < 4; i++) {
                address[i] = raw.get(4 + i);
            }
        } else if (family == 10 && raw.limit() >= 24) {
            address = new byte[16];
            for (int i = 0; i < 16; i++) {
                address[i] = raw.get(8 + i);
            }
        } else {
            return null;
        }
        try {
            return new InetSocketAddress(InetAddress.getByAddress(address), port);
        } catch (UnknownHostException e) {
            throw new IllegalStateException("a 4- or 16-byte address is always valid", e);
        }
    }
}
