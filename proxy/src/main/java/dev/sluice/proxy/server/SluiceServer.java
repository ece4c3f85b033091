package dev.sluice.proxy.server;

import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.explicit.ExplicitChannelInitializer;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.ListenSettings;
import dev.sluice.rules.policy.Policy;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Sluice: the event loops, the explicit listener, the policy holder, the dialer. Start it
 * with {@link #start}, stop it with {@link #close()} (which closes every connection; the caller closes
 * the audit log afterwards so that the records of those connections are flushed).
 */
public final class SluiceServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SluiceServer.class);

    /** How long {@link #close()} waits for the event loops to finish, in milliseconds. */
    static final long SHUTDOWN_TIMEOUT_MILLIS = 5_000;

    private final Transport transport;
    private final EventLoopGroup group;
    private final PolicyHolder policies;
    private final UpstreamDialer dialer;
    private final ProxyContext context;
    private final AtomicReference<SelfEndpoints> self = new AtomicReference<>(
            new SelfEndpoints(List.of(), Set.of()));
    private final List<Channel> listeners = new ArrayList<>();
    private InetSocketAddress proxyAddress;

    private SluiceServer(Policy policy, AuditLog auditLog, Clock clock, int ioThreads) {
        this.transport = Transport.detect();
        this.group = new MultiThreadIoEventLoopGroup(ioThreads, new DefaultThreadFactory("sluice-io", true),
                transport.ioHandlerFactory());
        this.policies = new PolicyHolder(policy);
        this.dialer = new UpstreamDialer(transport, self::get, UpstreamDialer.DEFAULT_CONNECT_TIMEOUT_MILLIS);
        this.context = new ProxyContext(policies, auditLog, dialer, clock);
    }

    /**
     * Starts Sluice on {@code policy}: binds the explicit listener at {@code listen.proxy} (port 0
     * binds an ephemeral port; see {@link #proxyAddress()}).
     *
     * @param ioThreads event loop threads; 0 means Netty's default (2 × cores)
     * @throws Exception when a listener cannot be bound (the server is closed again)
     */
    public static SluiceServer start(Policy policy, AuditLog auditLog, Clock clock, int ioThreads) throws Exception {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(auditLog, "auditLog");
        SluiceServer server = new SluiceServer(policy, auditLog, Objects.requireNonNull(clock, "clock"), ioThreads);
        try {
            server.bind(policy.listen());
        } catch (Exception e) {
            server.close();
            throw e;
        }
        return server;
    }

    private void bind(ListenSettings listen) throws Exception {
        Channel explicit = new ServerBootstrap()
                .group(group)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // A client's FIN must not close the connection by itself: a CONNECT tunnel relays it.
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childHandler(new ExplicitChannelInitializer(context))
                .bind(listen.proxy())
                .sync()
                .channel();
        listeners.add(explicit);
        proxyAddress = (InetSocketAddress) explicit.localAddress();

        List<InetSocketAddress> bound = new ArrayList<>();
        bound.add(proxyAddress);
        if (listen.admin() != null) {
            bound.add(listen.admin());
        }
        if (listen.transparent() != null) {
            bound.add(listen.transparent());
        }
        if (listen.dns() != null) {
            bound.add(listen.dns());
        }
        self.set(new SelfEndpoints(bound, localAddresses()));
        log.info("sluice listening: explicit={} transport={} policy={} sha256={}", proxyAddress, transport.name(),
                policies.current().source(), policies.current().sha256Hex());
    }

    private static Set<InetAddress> localAddresses() {
        Set<InetAddress> addresses = new HashSet<>();
        try {
            for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                addresses.addAll(Collections.list(nif.getInetAddresses()));
            }
        } catch (SocketException e) {
            log.warn("cannot list local interface addresses: {}", e.getMessage());
        }
        return addresses;
    }

    /** Returns the explicit listener's bound address (with the real port when 0 was asked for). */
    public InetSocketAddress proxyAddress() {
        return proxyAddress;
    }

    /** Returns the holder of the running policy snapshot. */
    public PolicyHolder policies() {
        return policies;
    }

    /** Returns the transport in use ({@code epoll} or {@code nio}). */
    public String transportName() {
        return transport.name();
    }

    /**
     * Stops accepting, closes every connection and stops the event loops, waiting up to
     * {@value #SHUTDOWN_TIMEOUT_MILLIS} ms. Idempotent.
     */
    @Override
    public void close() {
        for (Channel listener : listeners) {
            listener.close().awaitUninterruptibly();
        }
        listeners.clear();
        dialer.close();
        group.shutdownGracefully(0, SHUTDOWN_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(SHUTDOWN_TIMEOUT_MILLIS + 1_000);
    }
}
