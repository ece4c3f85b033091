package dev.sluice.proxy.transport;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
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
 * The Netty transport in use: native epoll where available (the default), NIO when epoll is not
 * available or NIO is asked for. Every channel
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

    /**
     * Returns the transport to use: native epoll when the platform has it, unless NIO is asked for
     * ({@code SLUICE_TRANSPORT=nio} in the environment, or {@code -Dsluice.transport=nio}, which wins)
     * and no feature in use needs epoll; NIO otherwise (no native library for this platform).
     *
     * <p>The epoll event loops use {@link KeptEpollRegistrations}: Netty 4.2.18's epoll handler loses the
     * registration of a half-closed socket whose interest set became empty (the next wait for writability
     * fails with {@code epoll_ctl(..) ENOENT} and the tail of a tunnel's answer is lost);
     * {@code OperationsTest.halfCloseUnderBackpressureDeliversTheWholeEcho} reproduces it without the
     * work-around. Epoll also reports a client's FIN (and reads the bytes before it) while reading is
     * paused, which NIO does not; the phases that pause reading take the FIN in order with what was
     * read before it (docs/architecture.md, "Transport").
     *
     * @param needsNative true when a feature in use exists only on epoll (the transparent listener reads
     *     each connection's original destination with {@code SO_ORIGINAL_DST}): epoll then, whatever is
     *     asked
     * @throws IllegalArgumentException when the transport asked for is neither {@code epoll} nor {@code nio}
     */
    public static Transport detect(boolean needsNative) {
        String asked = System.getProperty("sluice.transport", System.getenv().getOrDefault("SLUICE_TRANSPORT", "epoll"))
                .trim().toLowerCase(java.util.Locale.ROOT);
        if (!asked.equals("epoll") && !asked.equals("nio")) {
            throw new IllegalArgumentException("sluice.transport / SLUICE_TRANSPORT: expected epoll or nio, got '"
                    + asked + "'");
        }
        if ((needsNative || asked.equals("epoll")) && Epoll.isAvailable()) {
            return epoll();
        }
        return nio();
    }

    /**
     * Returns the epoll transport with {@link KeptEpollRegistrations}.
     *
     * @throws UnsatisfiedLinkError when the native library is not available ({@link Epoll#isAvailable()})
     */
    public static Transport epoll() {
        Epoll.ensureAvailability();
        return new Transport("epoll", new KeptEpollRegistrations(), EpollServerSocketChannel.class,
                EpollSocketChannel.class, EpollDatagramChannel.class);
    }

    /** Returns the NIO transport, available everywhere. */
    public static Transport nio() {
        return new Transport("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class,
                NioSocketChannel.class, NioDatagramChannel.class);
    }
}
