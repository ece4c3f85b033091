package dev.sluice.proxy.server;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.core.ConnectionLimits;
import dev.sluice.proxy.core.Draining;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.limits.EgressBudgets;
import dev.sluice.proxy.transport.Transport;

import dev.sluice.proxy.admin.AdminChannelInitializer;
import dev.sluice.proxy.admin.AdminToken;
import dev.sluice.proxy.audit.AuditExport;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditSink;
import dev.sluice.proxy.dns.DnsChannelInitializer;
import dev.sluice.proxy.dns.DnsListeners;
import dev.sluice.proxy.intercept.TransparentInterception;
import dev.sluice.proxy.transparent.TransparentChannelInitializer;
import dev.sluice.proxy.dial.UpstreamDialer;
import dev.sluice.proxy.explicit.ExplicitChannelInitializer;
import dev.sluice.proxy.tls.InterceptionTls;
import dev.sluice.proxy.metrics.MeteredAuditSink;
import dev.sluice.proxy.metrics.MetricNames;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.ListenSettings;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import io.micrometer.core.instrument.Tags;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
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
import java.net.BindException;
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
import java.util.Map;
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
    private final dev.sluice.proxy.approval.Approvals approvals;
    private final dev.sluice.proxy.alerts.AlertWebhook alerts;
    private final AuditExport export;
    private final Path dataDir;
    private final dev.sluice.proxy.credential.Credentials credentials;
    private final dev.sluice.proxy.capture.CaptureStore captures;

    private SluiceServer(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock, int ioThreads,
                         Map<String, String> otelConfig, Duration refusalLinger) throws Exception {
        this.dataDir = dataDir;
        this.transport = Transport.detect(policy.listen().transparent() != null);
        this.policies = new PolicyHolder(policy, clock);
        this.credentials = dev.sluice.proxy.credential.Credentials.start(dataDir, clock);
        try {
            credentials.prepare(policy);
        } catch (dev.sluice.proxy.credential.CredentialLoadException e) {
            credentials.close();
            throw new PolicyException(List.of(new dev.sluice.rules.policy.PolicyError(policy.source(), 0, 0,
                    e.getMessage())));
        }
        dev.sluice.proxy.credential.Credentials creds = credentials;
        this.reloader = policyFile == null ? null : new PolicyReloader(policyFile, policies, next -> {
            try {
                creds.prepare(next);
            } catch (dev.sluice.proxy.credential.CredentialLoadException e) {
                throw new PolicyException(List.of(new dev.sluice.rules.policy.PolicyError(next.source(), 0, 0,
                        e.getMessage())));
            }
        });
        this.auditLog = auditLog;
        this.metrics = new SluiceMetrics();
        Path base = policyFile == null ? Path.of("").toAbsolutePath() : policyFile.toAbsolutePath().getParent();
        List<Path> extraTrust = policy.tls().extraTrust().stream().map(base::resolve).toList();
        // First, so that a CA that cannot load stops the start before any thread exists.
        this.interception = InterceptionTls.start(dataDir, extraTrust, policies::current, metrics);
        this.group = new MultiThreadIoEventLoopGroup(ioThreads, new DefaultThreadFactory("sluice-io", true),
                transport.ioHandlerFactory());
        this.dialer = new UpstreamDialer(transport, self::get, UpstreamDialer.DEFAULT_CONNECT_TIMEOUT_MILLIS);
        // Read at start, like listen: the stdout and OTLP copies of each record, after the file's.
        this.export = AuditExport.start(policy.audit(), otelConfig, System.out, () -> policies.current().redFlags());
        AuditSink records = export == null ? auditLog : record -> {
            auditLog.write(record);
            export.write(record);
        };
        if (export != null) {
            for (AuditExport.Failure failure : AuditExport.Failure.values()) {
                metrics.functionCounter(MetricNames.AUDIT_EXPORT_FAILURES, Tags.of(MetricNames.REASON, failure.label()),
                        export, e -> e.failures(failure));
            }
            metrics.functionCounter(MetricNames.AUDIT_EXPORTED, Tags.of(MetricNames.SINK, "otlp"), export,
                    AuditExport::exportedOtlp);
            metrics.functionCounter(MetricNames.AUDIT_EXPORTED, Tags.of(MetricNames.SINK, "stdout"), export,
                    AuditExport::writtenStdout);
        }
        PolicyReloader reloads = reloader;
        this.approvals = new dev.sluice.proxy.approval.Approvals(() -> {
            if (reloads != null) {
                reloads.reload();
            }
        });
        this.alerts = new dev.sluice.proxy.alerts.AlertWebhook();
        metrics.functionCounter(MetricNames.ALERT_WEBHOOK_FAILURES, Tags.empty(), alerts,
                dev.sluice.proxy.alerts.AlertWebhook::failures);
        metrics.functionCounter(MetricNames.ALERTS_DROPPED, Tags.empty(), alerts,
                dev.sluice.proxy.alerts.AlertWebhook::dropped);
        metrics.functionCounter(MetricNames.ALERTS_SENT, Tags.empty(), alerts,
                dev.sluice.proxy.alerts.AlertWebhook::sent);
        this.captures = dev.sluice.proxy.capture.CaptureStore.start(dataDir, clock);
        captures.retain(policy.capture()); // prunes what an earlier run left, by this policy's limits
        metrics.functionCounter(MetricNames.CAPTURES, Tags.of(MetricNames.RESULT, "written"), captures,
                dev.sluice.proxy.capture.CaptureStore::written);
        metrics.functionCounter(MetricNames.CAPTURES, Tags.of(MetricNames.RESULT, "failed"), captures,
                dev.sluice.proxy.capture.CaptureStore::failed);
        metrics.functionCounter(MetricNames.CAPTURES, Tags.of(MetricNames.RESULT, "dropped"), captures,
                dev.sluice.proxy.capture.CaptureStore::dropped);
        this.context = new ProxyContext(policies, auditLog, new dev.sluice.proxy.alerts.AlertingAuditSink(
                new MeteredAuditSink(metrics, records), policies, alerts), dialer, clock,
                metrics, new ConnectionLimits(metrics), interception, new EgressBudgets(clock), approvals, credentials,
                captures, refusalLinger);
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
     *                run), TOFU pins ({@code pins/}) and captured exchanges ({@code captures/}, policy {@code capture})
     * @param ioThreads event loop threads; 0 means Netty's default (2 × cores)
     * @throws Exception when the CA cannot be loaded (for example its key is readable by others) or a
     *                   listener cannot be bound (the server is closed again)
     */
    public static SluiceServer start(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock,
                                     int ioThreads) throws Exception {
        return start(policy, policyFile, dataDir, auditLog, clock, ioThreads, Map.of());
    }

    /**
     * Starts Sluice like {@link #start(Policy, Path, Path, AuditLog, Clock, int)}, with OpenTelemetry
     * settings for the audit export ({@link AuditExport}) that override the environment's.
     *
     * @param otelConfig {@code otel.*} property names and values, e.g. {@code otel.exporter.otlp.endpoint}
     */
    public static SluiceServer start(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock,
                                     int ioThreads, Map<String, String> otelConfig) throws Exception {
        return start(policy, policyFile, dataDir, auditLog, clock, ioThreads, otelConfig,
                ProxyContext.DEFAULT_REFUSAL_LINGER);
    }

    /**
     * Starts Sluice like {@link #start(Policy, Path, Path, AuditLog, Clock, int, Map)}, with its own refusal
     * linger ({@link ProxyContext#refusalLinger}) instead of {@link ProxyContext#DEFAULT_REFUSAL_LINGER}:
     * a test that must tell a close caused by the request's end from one caused by the bound sets it for
     * the server it starts.
     *
     * @param refusalLinger after a refusal sent while the request body still arrives, the longest time the
     *                      body is read and dropped before the connection closes; positive
     */
    public static SluiceServer start(Policy policy, Path policyFile, Path dataDir, AuditLog auditLog, Clock clock,
                                     int ioThreads, Map<String, String> otelConfig, Duration refusalLinger)
            throws Exception {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(auditLog, "auditLog");
        SluiceServer server = new SluiceServer(policy, policyFile, Objects.requireNonNull(dataDir, "dataDir"),
                auditLog, Objects.requireNonNull(clock, "clock"), ioThreads,
                Objects.requireNonNull(otelConfig, "otelConfig"), Objects.requireNonNull(refusalLinger, "refusalLinger"));
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
        Channel explicit = bound(listener(tracked)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // A client's FIN must not close the connection by itself: a CONNECT tunnel relays it.
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .bind(listen.proxy()), "listen.proxy", listen.proxy());
        listeners.add(explicit);
        proxyAddress = (InetSocketAddress) explicit.localAddress();

        List<InetSocketAddress> bound = new ArrayList<>();
        bound.add(proxyAddress);
        if (listen.admin() != null) {
            Channel admin = bound(listener(new AdminChannelInitializer(metrics, policies, this::notReadyReason,
                    approvals, AdminToken.loadOrCreate(dataDir)))
                    .bind(listen.admin()), "listen.admin", listen.admin());
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
                throw new IllegalStateException("listen.transparent needs Netty's native epoll transport, which "
                        + "ships for Linux x86_64 and aarch64; here (" + System.getProperty("os.name") + " "
                        + System.getProperty("os.arch") + ") it did not load: " + Epoll.unavailabilityCause()
                        + " (with a read-only root and a noexec /tmp, put the library on -Djava.library.path, "
                        + "as the container image does, or point -Dio.netty.native.workdir at an executable directory)");
            }
            TransparentChannelInitializer transparentInit = new TransparentChannelInitializer(context,
                    new TransparentInterception(context));
            Channel transparent = bound(listener(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel ch) {
                    downstream.add(ch);
                    ch.pipeline().addLast(transparentInit);
                }
            }).childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .bind(listen.transparent()), "listen.transparent", listen.transparent());
            listeners.add(transparent);
            transparentAddress = (InetSocketAddress) transparent.localAddress();
            bound.add(transparentAddress);
        }
        if (listen.dns() != null) {
            // UDP, and TCP (RFC 7766) on the same address and port.
            List<Channel> dns;
            try {
                dns = DnsListeners.bind(group, transport,
                        new DnsChannelInitializer(context, listen.transparent().getAddress()), listen.dns());
            } catch (Exception e) {
                throw bindFailure("listen.dns", listen.dns(), e);
            }
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

    /** Waits for {@code future}'s bind; a failure becomes a {@link java.net.BindException} naming the listener. */
    private static Channel bound(ChannelFuture future, String key, InetSocketAddress address) throws BindException {
        future.awaitUninterruptibly();
        if (!future.isSuccess()) {
            throw bindFailure(key, address, future.cause());
        }
        return future.channel();
    }

    /**
     * Describes a listener that could not be bound, in one line an operator can act on: the policy key,
     * the address, the system's words for the failure, and a hint, e.g. {@code listen.transparent
     * 10.220.5.1:15001: cannot assign requested address — create the namespace first
     * (docker/sandbox-netns.sh up)}.
     *
     * @param key the policy key that names the listener ({@code listen.proxy}, {@code listen.admin},
     *            {@code listen.transparent}, {@code listen.dns})
     */
    static BindException bindFailure(String key, InetSocketAddress address, Throwable cause) {
        String what = cause == null || cause.getMessage() == null ? String.valueOf(cause) : cause.getMessage();
        // Netty's native transport says "bind(..) failed with error(-99): Cannot assign requested address";
        // NIO says "Cannot assign requested address".
        java.util.regex.Matcher syscall = java.util.regex.Pattern.compile("^\\w+\\(\\.\\.\\) failed[^:]*: ").matcher(what);
        if (syscall.find()) {
            what = what.substring(syscall.end());
        }
        String lower = what.toLowerCase(java.util.Locale.ROOT);
        String hint;
        if (lower.contains("assign requested address")) {
            hint = key.equals("listen.transparent") || key.equals("listen.dns")
                    ? "create the namespace first (docker/sandbox-netns.sh up)"
                    : "no local interface has this address";
        } else if (lower.contains("already in use")) {
            hint = "another process listens there (another Sluice?); stop it or change " + key;
        } else if (lower.contains("permission denied")) {
            hint = "ports below 1024 need CAP_NET_BIND_SERVICE; choose a port above 1023";
        } else {
            hint = "check " + key + " in the policy";
        }
        String host = address.getAddress() == null ? address.getHostString() : address.getAddress().getHostAddress();
        BindException e = new BindException(key + " " + (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":"
                + address.getPort() + ": " + lower + " \u2014 " + hint);
        if (cause != null) {
            e.initCause(cause);
        }
        return e;
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
    public @Nullable InetSocketAddress adminAddress() {
        return adminAddress;
    }

    /** Returns the transparent listener's bound address, or null when none is configured. */
    public @Nullable InetSocketAddress transparentAddress() {
        return transparentAddress;
    }

    /** Returns the DNS responder's bound address (UDP), or null when none is configured. */
    public @Nullable InetSocketAddress dnsAddress() {
        return dnsAddress;
    }

    /** Returns the holder of the running policy snapshot. */
    public PolicyHolder policies() {
        return policies;
    }

    /** Returns the reloader of the policy file, or null when running the embedded policy. */
    public @Nullable PolicyReloader reloader() {
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
        long startNanos = System.nanoTime();
        int open = downstream.size();
        if (ready) {
            log.info("sluice stopping: {} connection(s) open, grace {} ms", open, grace.toMillis());
        }
        if (reloader != null) {
            reloader.close();
        }
        credentials.close();
        approvals.close();
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
        if (export != null) {
            export.close(); // after the event loops: every connection has written its record
        }
        alerts.close(); // queued alerts are not sent: the sender must not hold shutdown up
        captures.close(); // after the event loops: what they queued is written (at most 5 s)
        metrics.registry().close();
        interception.close();
        if (ready) {
            log.info("sluice stopped in {} ms ({} connection(s) were open)",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos), open);
        }
    }

    /** Returns the interception TLS material (the local CA among it). */
    public InterceptionTls interception() {
        return interception;
    }
}
