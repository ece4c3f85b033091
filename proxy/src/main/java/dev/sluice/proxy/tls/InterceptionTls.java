package dev.sluice.proxy.tls;

import com.github.benmanes.caffeine.cache.AsyncLoadingCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.sluice.certs.CaException;
import dev.sluice.certs.IssuedLeaf;
import dev.sluice.certs.LeafCache;
import dev.sluice.certs.LeafIssuer;
import dev.sluice.certs.LocalCa;
import dev.sluice.certs.PinCheck;
import dev.sluice.certs.PinMode;
import dev.sluice.certs.PinPolicy;
import dev.sluice.certs.PinResult;
import dev.sluice.certs.PinStore;
import dev.sluice.certs.PinVerifier;
import dev.sluice.certs.PinningTrustManager;
import dev.sluice.certs.UpstreamTrust;
import dev.sluice.proxy.metrics.MetricNames;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.Policy;
import java.util.function.Supplier;
import dev.sluice.rules.policy.InspectedHost;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.OpenSslSessionContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The TLS material of interception, built once per server from the data dir: the local CA
 * ({@code ca.key.pem}, {@code ca.crt.pem}; created on first run, refused when the key is readable by
 * others), per-host leaf certificates issued off the event loop on a small executor and cached, the
 * downstream (server) {@link SslContext} per host with ALPN offering {@code h2} and {@code http/1.1}
 * (RFC 7301; the server's preference, h2 first), and the upstream (client) {@link SslContext}: PKIX against the system roots plus {@code tls.extra_trust},
 * hostname verification, then the host's SPKI pins ({@code inspect.<host>.pins}, read from the running
 * policy at each handshake; TOFU pins stored in {@code <data dir>/pins}).
 *
 * <p>Upstream TLS sessions are never resumed (BoringSSL's client session cache is off; JDK engines get
 * no peer port, which the JDK's client cache is keyed by), so every upstream connection's chain is
 * validated and pinned by a full handshake under the policy and pin store of that moment. A session
 * resumed anyway is checked again by {@link ResumableTrust}, and {@link HoldUntilHandshake} keeps the
 * request out of the TLS engine until that has passed (docs/architecture.md, "Upstream trust on every
 * connection").
 */
public final class InterceptionTls implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(InterceptionTls.class);

    /**
     * Threads that issue leaf certificates (one P-256 signature each, about 1 ms) and run upstream
     * handshake tasks (chain validation, TOFU pin store I/O).
     */
    static final int ISSUER_THREADS = 2;

    private static final ApplicationProtocolConfig HTTP_1_1_ONLY = new ApplicationProtocolConfig(
            ApplicationProtocolConfig.Protocol.ALPN,
            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
            ApplicationProtocolNames.HTTP_1_1);

    /** Downstream ALPN: h2 preferred, then http/1.1 (RFC 9113 section 3.2, RFC 7301 section 3.2). */
    private static final ApplicationProtocolConfig H2_AND_HTTP_1_1 = new ApplicationProtocolConfig(
            ApplicationProtocolConfig.Protocol.ALPN,
            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
            ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1);

    /**
     * Returns the provider for a server starting now: BoringSSL (netty-tcnative) when it loads — native
     * AES-GCM, several times cheaper per byte than the JDK 17 provider's GHASH on direct buffers — and
     * the JDK provider otherwise. Trust decisions are the same either way: both call
     * {@link PinningTrustManager}. {@link #PROVIDER_PROPERTY} overrides the choice.
     *
     * @throws IllegalStateException when {@code openssl} is asked for and BoringSSL does not load
     * @throws IllegalArgumentException when the property names no provider
     */
    static SslProvider chooseProvider() {
        String asked = System.getProperty(PROVIDER_PROPERTY,
                System.getenv().getOrDefault("SLUICE_TLS_PROVIDER", "auto")).trim().toLowerCase(java.util.Locale.ROOT);
        switch (asked) {
            case "auto":
                return OpenSsl.isAvailable() ? SslProvider.OPENSSL : SslProvider.JDK;
            case "openssl":
                if (!OpenSsl.isAvailable()) {
                    throw new IllegalStateException(PROVIDER_PROPERTY + "=openssl, but BoringSSL (netty-tcnative) "
                            + "did not load: " + OpenSsl.unavailabilityCause());
                }
                return SslProvider.OPENSSL;
            case "jdk":
                return SslProvider.JDK;
            default:
                throw new IllegalArgumentException(PROVIDER_PROPERTY + ": " + asked + " (expected: auto, openssl or jdk)");
        }
    }

    /**
     * The system property ({@code -Dsluice.tls.provider}, or the environment variable
     * {@code SLUICE_TLS_PROVIDER}) that picks the provider: {@code auto} (default), {@code openssl}
     * (refuses to start when BoringSSL does not load) or {@code jdk}. Read once per server start.
     */
    public static final String PROVIDER_PROPERTY = "sluice.tls.provider";

    /**
     * The peer port given to upstream engines: none. The port is only a hint for session reuse
     * ({@link javax.net.ssl.SSLContext#createSSLEngine(String, int)}); SNI, hostname verification and
     * pins use the host.
     */
    private static final int NO_PORT = -1;

    private final LocalCa ca;
    private final LeafCache leaves;
    private final ExecutorService issuers;
    private final AsyncLoadingCache<String, SslContext> serverContexts;
    private final SslContext upstreamContext;
    /** The upstream context that offers {@code h2} before {@code http/1.1} (same trust manager, no cache). */
    private final SslContext upstreamH2Context;
    private final SslProvider provider;

    private InterceptionTls(LocalCa ca, LeafCache leaves, ExecutorService issuers, SslContext upstreamContext,
                            SslContext upstreamH2Context, SslProvider provider) {
        this.provider = provider;
        this.upstreamH2Context = upstreamH2Context;
        this.ca = ca;
        this.leaves = leaves;
        this.issuers = issuers;
        this.upstreamContext = upstreamContext;
        this.serverContexts = Caffeine.newBuilder()
                .recordStats()
                .maximumSize(LeafCache.DEFAULT_MAXIMUM_SIZE)
                .expireAfterWrite(LeafCache.DEFAULT_EXPIRE_AFTER_WRITE)
                .executor(issuers)
                .buildAsync((host, executor) -> leaves.leafFor(host, executor).thenApply(this::serverContext));
    }

    /**
     * Loads (or on first run creates) the CA in {@code dataDir} and builds the contexts.
     *
     * @param extraTrust PEM files of extra upstream trust anchors (already resolved paths)
     * @throws CaException when the CA cannot be loaded (for example a key readable by others)
     * @throws IOException when the pin store or a trust file cannot be read
     * @throws GeneralSecurityException when the trust store cannot be built
     */
    public static InterceptionTls start(Path dataDir, List<Path> extraTrust, Supplier<Policy> policies,
                                        SluiceMetrics metrics) throws CaException, IOException, GeneralSecurityException {
        LocalCa ca = LocalCa.loadOrCreate(dataDir);
        PinStore pins = PinStore.open(dataDir);
        UpstreamTrust trust = UpstreamTrust.systemPlus(readCertificates(extraTrust));
        PinVerifier verifier = new PinVerifier(trust, host -> pinPolicy(policies.get().inspected(host)), pins);
        PinningTrustManager trustManager = new PinningTrustManager(verifier, check -> {
            if (check.result() == PinResult.MISMATCH) {
                metrics.pinFailure(check.host());
                log.warn("pin mismatch for {} (mode {}): chain {} expected {}", check.host(),
                        check.mode().name().toLowerCase(java.util.Locale.ROOT), check.chainPins(), check.expectedPins());
            }
        });
        SslProvider provider = chooseProvider();
        SslContext upstream = upstreamContext(provider, trustManager, HTTP_1_1_ONLY);
        SslContext upstreamH2 = upstreamContext(provider, trustManager, H2_AND_HTTP_1_1);
        AtomicInteger n = new AtomicInteger();
        ExecutorService issuers = Executors.newFixedThreadPool(ISSUER_THREADS, r -> {
            Thread t = new Thread(r, "sluice-tls-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        InterceptionTls tls = new InterceptionTls(ca, new LeafCache(new LeafIssuer(ca)), issuers, upstream, upstreamH2,
                provider);
        tls.bindMetrics(metrics);
        return tls;
    }

    /**
     * Exposes the leaf cache's look-ups as {@code sluice_tls_leaf_cache_total{result="hit"|"miss"}}: the
     * cache of a host's leaf with its server context ({@link #serverContext(String)}), asked once per
     * intercepted handshake; a miss issues a leaf (or takes one from the {@link LeafCache} behind it).
     */
    private void bindMetrics(SluiceMetrics metrics) {
        metrics.functionCounter(MetricNames.TLS_LEAF_CACHE, io.micrometer.core.instrument.Tags.of(MetricNames.RESULT, "hit"),
                serverContexts, c -> c.synchronous().stats().hitCount());
        metrics.functionCounter(MetricNames.TLS_LEAF_CACHE, io.micrometer.core.instrument.Tags.of(MetricNames.RESULT, "miss"),
                serverContexts, c -> c.synchronous().stats().missCount());
    }

    /**
     * Builds an upstream (client) context offering {@code alpn}: the pinning trust manager behind
     * {@link ResumableTrust}, and no session cache (every upstream handshake is a full one, validated now).
     */
    private static SslContext upstreamContext(SslProvider provider, PinningTrustManager trustManager,
                                              ApplicationProtocolConfig alpn) throws SSLException {
        SslContext context = SslContextBuilder.forClient()
                .sslProvider(provider)
                .trustManager(new ResumableTrust(trustManager))
                .applicationProtocolConfig(alpn)
                .build();
        if (context.sessionContext() instanceof OpenSslSessionContext sessions) {
            sessions.setSessionCacheEnabled(false);
        }
        return context;
    }

    private static PinPolicy pinPolicy(Optional<InspectedHost> inspected) {
        if (inspected.isEmpty()) {
            return PinPolicy.none();
        }
        InspectedHost host = inspected.get();
        PinMode mode = host.pinReportOnly() ? PinMode.REPORT : PinMode.ENFORCE;
        return switch (host.pinKind()) {
            case NONE -> PinPolicy.none();
            case TOFU -> PinPolicy.tofu(mode);
            case EXPLICIT -> PinPolicy.explicit(host.pins(), mode);
        };
    }

    private static List<X509Certificate> readCertificates(List<Path> files) throws IOException, GeneralSecurityException {
        List<X509Certificate> certificates = new ArrayList<>();
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        for (Path file : files) {
            try (InputStream in = Files.newInputStream(file)) {
                for (Certificate c : factory.generateCertificates(in)) {
                    certificates.add((X509Certificate) c);
                }
            }
        }
        return certificates;
    }

    private SslContext serverContext(IssuedLeaf leaf) {
        try {
            return SslContextBuilder.forServer(leaf.key(), leaf.chain())
                    .sslProvider(provider)
                    .applicationProtocolConfig(H2_AND_HTTP_1_1)
                    .build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot build a server context for a leaf", e);
        }
    }

    /**
     * Returns the downstream context for {@code host} (canonical name), issuing its leaf off the event
     * loop on first use; completes exceptionally when issuance fails.
     */
    public CompletableFuture<SslContext> serverContext(String host) {
        return serverContexts.get(host);
    }

    /** Returns the upstream (client) context: PKIX, hostname verification, then pins. */
    public SslContext upstreamContext() {
        return upstreamContext;
    }

    /**
     * Adds upstream TLS for {@code host:port} to {@code pipeline} ({@link UpstreamTls}): the client
     * {@link SslHandler}, whose handshake tasks — chain validation and the TOFU pin store's file reads
     * and writes — run on this object's executor, off the event loop, then {@link HoldUntilHandshake}.
     */
    public void installUpstream(ChannelPipeline pipeline, String host, int port) {
        // No peer port: the JDK provider looks sessions up by host and port, and keeps none for a port of
        // -1, so no upstream session is ever resumed (BoringSSL's cache is off, see start()).
        install(pipeline, upstreamContext.newHandler(pipeline.channel().alloc(), host, NO_PORT, issuers));
    }

    /**
     * Adds upstream TLS like {@link #installUpstream}, but offering {@code h2} and then {@code http/1.1}
     * by ALPN (RFC 7301), for the upstream legs of an HTTP/2 client's streams: the origin picks, and the
     * handshake's trust and pin check are the same as on every upstream connection.
     */
    public void installUpstreamOfferingH2(ChannelPipeline pipeline, String host, int port) {
        install(pipeline, upstreamH2Context.newHandler(pipeline.channel().alloc(), host, NO_PORT, issuers));
    }

    /** Adds {@code tls} and the write hold behind it to the end of {@code pipeline}. */
    static void install(ChannelPipeline pipeline, SslHandler tls) {
        pipeline.addLast("tls", tls);
        pipeline.addLast("tls-hold", new HoldUntilHandshake());
    }

    /** Returns the TLS provider both sides of interception use (chosen at start). */
    public SslProvider provider() {
        return provider;
    }

    /** Returns the local CA. */
    public LocalCa ca() {
        return ca;
    }

    /** Returns the pin check of a finished upstream handshake, if the trust manager recorded one. */
    public static Optional<PinCheck> pinCheck(javax.net.ssl.SSLSession session) {
        return PinningTrustManager.checkOf(session);
    }

    @Override
    public void close() {
        issuers.shutdownNow();
    }

    /** Returns how long a cached downstream context lives. */
    public Duration contextLifetime() {
        return LeafCache.DEFAULT_EXPIRE_AFTER_WRITE;
    }
}
