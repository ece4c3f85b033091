package dev.sluice.proxy.server;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * The Netty transport in use: native epoll where the platform has it, NIO otherwise. Every channel
 * Sluice opens (listeners, upstream sockets, DNS) uses the same transport so that upstream channels
 * can share the downstream channel's event loop.
 *
 * @param name {@code epoll} or {@code nio}, for the start-up log line
 * @param ioHandlerFactory the factory for the event loop group
 * @param serverChannel listener channel class
 * @param socketChannel upstream TCP channel class
 * @param datagramChannel DNS (UDP) channel class
 */
public record Transport(String name, IoHandlerFactory ioHandlerFactory,
                        Class<? extends ServerSocketChannel> serverChannel,
                        Class<? extends SocketChannel> socketChannel,
                        Class<? extends DatagramChannel> datagramChannel) {

    /** Returns epoll when {@link Epoll#isAvailable()}, NIO otherwise. */
    public static Transport detect() {
        if (Epoll.isAvailable()) {
            return new Transport("epoll", EpollIoHandler.newFactory(), EpollServerSocketChannel.class,
                    EpollSocketChannel.class, EpollDatagramChannel.class);
        }
        return nio();
    }

    /** Returns the NIO transport, available everywhere. */
    public static Transport nio() {
        return new Transport("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class,
                NioSocketChannel.class, NioDatagramChannel.class);
    }
}
