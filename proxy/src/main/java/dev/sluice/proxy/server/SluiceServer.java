package dev.sluice.proxy.server;

import dev.sluice.proxy.admin.AdminChannelInitializer;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.dns.DnsChannelInitializer;
import dev.sluice.proxy.dns.DnsListeners;
import dev.sluice.proxy.intercept.TransparentInterception;
import dev.sluice.proxy.transparent.TransparentChannelInitializer;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.explicit.ExplicitChannelInitializer;
import dev.sluice.proxy.intercept.InterceptionTls;
import dev.sluice.proxy.metrics.MeteredAuditSink;
import dev.sluice.proxy.metrics.MetricNames;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.ListenSettings;
import dev.sluice.rules.policy.Policy;
import io.micrometer.core.instrument.Tags;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
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
 * One running Sluice: the event loops, the explicit, transparent and admin listeners, the DNS responder, the policy holder (and its
 * reloader when the policy came from a file), the dialer, the metrics. Start it with {@link #start},
 * stop it with {@link #close(Duration)}; the caller closes the audit log afterwards so that the
 * records of the last connections are flushed.
 */
public final class SluiceServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SluiceServer.class);

    /** How long {@link #close(Duration)} waits for the event loops to stop, in milliseconds. */
    static final long LOOP_SHUTDOWN_MILLIS = 5_000;

    private final Transport transport;
    private final EventLoopGroup group;
    private final PolicyHolder policies;
    private final PolicyReloader reloader;
    private final AuditLog auditLog;
    private final UpstreamDialer dialer;
    private final SluiceMetrics metrics;
    private final ProxyContext context;
    private final ChannelGroup downstream = new DefaultChannelGroup("sluice-downstream", GlobalEventExecutor.INSTANCE);
    private final AtomicReference<SelfEndpoints> self = new AtomicReference<>(
            new SelfEndpoints(List.of(), Set.of()));
    private final List<Channel> listeners = new ArrayList<>();
    private InetSocketAddress proxyAddress;
    private InetSocketAddress adminAddress;
    private InetSocketAddress transparentAddress;
    private InetSocketAddress dnsAddress;
    private volatile boolean ready;
    private boolean closed;

    private final InterceptionTls interception;

    private SluiceServer(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock, int ioThreads)
            throws Exception {
        this.transport = Transport.detect(policy.listen().transparent() != null);
        this.policies = new PolicyHolder(policy, clock);
        this.reloader = policyFile == null ? null : new PolicyReloader(policyFile, policies);
        this.auditLog = auditLog;
        this.metrics = new SluiceMetrics();
        Path base = policyFile == null ? Path.of("").toAbsolutePath() : policyFile.toAbsolutePath().getParent();
        List<Path> extraTrust = policy.tls().extraTrust().stream().map(base::resolve).toList();
        // First, so that a CA that cannot load stops the start before any thread exists.
        this.interception = InterceptionTls.start(dataDir, extraTrust, policies, metrics);
        this.group = new MultiThreadIoEventLoopGroup(ioThreads, new DefaultThreadFactory("sluice-io", true),
                transport.ioHandlerFactory());
        this.dialer = new UpstreamDialer(transport, self::get, UpstreamDialer.DEFAULT_CONNECT_TIMEOUT_MILLIS);
        this.context = new ProxyContext(policies, auditLog, new MeteredAuditSink(metrics, auditLog), dialer, clock,
                metrics, new ConnectionLimits(metrics), interception, new EgressBudgets(clock));
        metrics.functionCounter(MetricNames.AUDIT_WRITE_FAILURES, Tags.empty(), auditLog, AuditLog::writeFailures);
        if (reloader != null) {
            metrics.functionCounter(MetricNames.POLICY_RELOADS, Tags.of(MetricNames.RESULT, "ok"), reloader,
                    PolicyReloader::reloadsOk);
            metrics.functionCounter(MetricNames.POLICY_RELOADS, Tags.of(MetricNames.RESULT, "error"), reloader,
                    PolicyReloader::reloadErrors);
        }
    }

    /**
     * Starts Sluice on {@code policy}: binds the explicit listener at {@code listen.proxy} and the admin
     * listener at {@code listen.admin} (port 0 binds an ephemeral port; see {@link #proxyAddress()}).
     *
     * @param policyFile the file {@code policy} was loaded from, for reloads and for resolving
     *                   {@code tls.extra_trust}; null for the embedded policy
     * @param dataDir the data dir: the local CA ({@code ca.key.pem}, {@code ca.crt.pem}, created on first
     *                run) and TOFU pins ({@code pins/})
     * @param ioThreads event loop threads; 0 means Netty's default (2 × cores)
     * @throws Exception when the CA cannot be loaded (for example its key is readable by others) or a
     *                   listener cannot be bound (the server is closed again)
     */
    public static SluiceServer start(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock,
                                     int ioThreads) throws Exception {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(auditLog, "auditLog");
        SluiceServer server = new SluiceServer(policy, policyFile, Objects.requireNonNull(dataDir, "dataDir"),
                auditLog, Objects.requireNonNull(clock, "clock"), ioThreads);
        try {
            server.bind(policy.listen());
        } catch (Exception e) {
            server.close(Duration.ZERO);
            throw e;
        }
        return server;
    }

    private void bind(ListenSettings listen) throws Exception {
        ExplicitChannelInitializer explicitInit = new ExplicitChannelInitializer(context);
        ChannelHandler tracked = new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                downstream.add(ch);
                ch.pipeline().addLast(explicitInit);
            }
        };
        Channel explicit = listener(tracked)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // A client's FIN must not close the connection by itself: a CONNECT tunnel relays it.
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .bind(listen.proxy()).sync().channel();
        listeners.add(explicit);
        proxyAddress = (InetSocketAddress) explicit.localAddress();

        List<InetSocketAddress> bound = new ArrayList<>();
        bound.add(proxyAddress);
        if (listen.admin() != null) {
            Channel admin = listener(new AdminChannelInitializer(metrics, policies, this::notReadyReason))
                    .bind(listen.admin()).sync().channel();
            listeners.add(admin);
            adminAddress = (InetSocketAddress) admin.localAddress();
            if (!adminAddress.getAddress().isLoopbackAddress()) {
                // Say so: /metrics and /policy describe every extension's traffic and rules.
                log.warn("listen.admin {} is reachable beyond loopback: /metrics and /policy are for operators, "
                        + "never for a sandbox; keep that address off every sandbox network", adminAddress);
            }
            bound.add(adminAddress);
        }
        if (listen.transparent() != null) {
            if (!"epoll".equals(transport.name())) {
                // Without SO_ORIGINAL_DST every connection would look addressed to the listener's port.
                throw new IllegalStateException("listen.transparent needs the native epoll transport (Linux): "
                        + Epoll.unavailabilityCause());
            }
            TransparentChannelInitializer transparentInit = new TransparentChannelInitializer(context,
                    new TransparentInterception(context));
            Channel transparent = listener(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    downstream.add(ch);
                    ch.pipeline().addLast(transparentInit);
                }
            }).childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .bind(listen.transparent()).sync().channel();
            listeners.add(transparent);
            transparentAddress = (InetSocketAddress) transparent.localAddress();
            bound.add(transparentAddress);
        }
        if (listen.dns() != null) {
            // UDP, and TCP (RFC 7766) on the same address and port.
            List<Channel> dns = DnsListeners.bind(group, transport,
                    new DnsChannelInitializer(context, listen.transparent().getAddress()), listen.dns());
            listeners.addAll(dns);
            dnsAddress = (InetSocketAddress) dns.get(0).localAddress();
            bound.add(dnsAddress);
        }
        self.set(new SelfEndpoints(bound, localAddresses()));
        ready = true;
        log.info("sluice listening: explicit={} admin={} transparent={} dns={} transport={} policy={} sha256={}",
                proxyAddress, adminAddress, transparentAddress, dnsAddress, transport.name(), policies.current().source(), policies.current().sha256Hex());
        log.info("redaction keyword scan: {}", policies.current().redaction().detectors().prefilter().vectorized()
                ? "vector (jdk.incubator.vector)"
                : "scalar (start the JVM with --add-modules jdk.incubator.vector, as ./sluice does, for the vector scan)");
    }

    private ServerBootstrap listener(ChannelHandler childHandler) {
        return new ServerBootstrap()
                .group(group)
                .channel(transport.serverChannel())
                .option(ChannelOption.SO_BACKLOG, 1024)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(childHandler);
    }

    private String notReadyReason() {
        if (!ready) {
            return "listeners not bound";
        }
        if (closed) {
            return "shutting down";
        }
        if (!auditLog.healthy()) {
            return "audit log cannot write";
        }
        return null;
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

    /** Returns how many client connections (every listener) are open right now. */
    public int openDownstreamConnections() {
        return downstream.size();
    }

    /** Returns the explicit listener's bound address (with the real port when 0 was asked for). */
    public InetSocketAddress proxyAddress() {
        return proxyAddress;
    }

    /** Returns the admin listener's bound address, or null when none is configured. */
    public InetSocketAddress adminAddress() {
        return adminAddress;
    }

    /** Returns the transparent listener's bound address, or null when none is configured. */
    public InetSocketAddress transparentAddress() {
        return transparentAddress;
    }

    /** Returns the DNS responder's bound address (UDP), or null when none is configured. */
    public InetSocketAddress dnsAddress() {
        return dnsAddress;
    }

    /** Returns the holder of the running policy snapshot. */
    public PolicyHolder policies() {
        return policies;
    }

    /** Returns the reloader of the policy file, or null when running the embedded policy. */
    public PolicyReloader reloader() {
        return reloader;
    }

    /** Returns the metrics registry of this server. */
    public SluiceMetrics metrics() {
        return metrics;
    }

    /** Returns the transport in use ({@code epoll} or {@code nio}). */
    public String transportName() {
        return transport.name();
    }

    /** Stops at once: {@link #close(Duration)} with no grace. */
    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /**
     * Graceful shutdown: stops accepting, closes idle connections, lets exchanges and tunnels in flight
     * finish for up to {@code grace}, then closes whatever is left and stops the event loops. Every
     * connection writes its audit record on the way. Idempotent.
     *
     * @param grace how long in-flight traffic may continue (zero: close at once)
     */
    public synchronized void close(Duration grace) {
        if (closed) {
            return;
        }
        closed = true;
        if (reloader != null) {
            reloader.close();
        }
        for (Channel listener : listeners) {
            listener.close().awaitUninterruptibly();
        }
        listeners.clear();
        if (!grace.isZero() && !downstream.isEmpty()) {
            for (Channel ch : downstream) {
                ch.pipeline().fireUserEventTriggered(Draining.INSTANCE);
            }
            long deadline = System.nanoTime() + grace.toNanos();
            while (!downstream.isEmpty() && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            if (!downstream.isEmpty()) {
                log.warn("shutdown: {} connection(s) still open after {} ms; closing them", downstream.size(),
                        grace.toMillis());
            }
        }
        downstream.close().awaitUninterruptibly(LOOP_SHUTDOWN_MILLIS);
        dialer.close();
        group.shutdownGracefully(0, LOOP_SHUTDOWN_MILLIS, TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(LOOP_SHUTDOWN_MILLIS + 1_000);
        metrics.registry().close();
        interception.close();
    }

    /** Returns the interception TLS material (the local CA among it). */
    public InterceptionTls interception() {
        return interception;
    }
}
