package dev.sluice.proxy.dial;

import dev.sluice.proxy.transport.Transport;
import dev.sluice.rules.decision.AddressDecision;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.resolver.ResolvedAddressTypes;
import io.netty.resolver.dns.DnsNameResolver;
import io.netty.resolver.dns.DnsNameResolverBuilder;
import io.netty.resolver.dns.DnsServerAddressStreamProvider;
import io.netty.resolver.dns.DnsServerAddressStreamProviders;
import io.netty.resolver.dns.SequentialDnsServerAddressStreamProvider;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Safe dialing (design.md step 5): resolve asynchronously, classify every answer through
 * {@link Decider#checkAddresses}, then connect to exactly the checked address — never a second lookup.
 *
 * <p>Answers come from, in order: the target itself when it is an IP literal; the policy's
 * {@code network.hosts}; Netty's {@link DnsNameResolver} (one per event loop, asking the policy's
 * {@code network.resolvers} or the system's resolv.conf, with /etc/hosts consulted first as Netty does).
 * The upstream channel is registered on the caller's event loop with the same transport.
 */
public final class UpstreamDialer implements AutoCloseable {

    /** Default time allowed for the TCP connect, in milliseconds. */
    public static final int DEFAULT_CONNECT_TIMEOUT_MILLIS = 10_000;

    /** Default time allowed for one DNS query, in milliseconds. */
    public static final long DEFAULT_DNS_QUERY_TIMEOUT_MILLIS = 5_000;

    private final Transport transport;
    private final Supplier<SelfEndpoints> self;
    private final int connectTimeoutMillis;
    private final Map<ResolverKey, DnsNameResolver> resolvers = new ConcurrentHashMap<>();
    /** Local ends of the upstream connections open now (see {@link #isOwnUpstream}). */
    private final java.util.Set<InetSocketAddress> ownLocalEnds = ConcurrentHashMap.newKeySet();

    /**
     * @param transport the transport of the event loops that will call {@link #dial}
     * @param self Sluice's own listening endpoints, read at each dial
     * @param connectTimeoutMillis TCP connect timeout in milliseconds (&gt; 0)
     */
    public UpstreamDialer(Transport transport, Supplier<SelfEndpoints> self, int connectTimeoutMillis) {
        this.transport = Objects.requireNonNull(transport, "transport");
        this.self = Objects.requireNonNull(self, "self");
        if (connectTimeoutMillis <= 0) {
            throw new IllegalArgumentException("connectTimeoutMillis: " + connectTimeoutMillis + " (expected: > 0)");
        }
        this.connectTimeoutMillis = connectTimeoutMillis;
    }

    /**
     * Resolves {@code target}, checks every answer, and connects to the first checked answer.
     *
     * @param loop the downstream channel's event loop; the upstream channel is registered on it
     * @param policy the snapshot that made {@code nameDecision}
     * @param nameDecision the decision on the name; it must permit
     * @param target where to connect
     * @param initializer installed on the upstream channel before it connects
     * @return a future that completes on {@code loop} with the connected channel, or fails with a
     *         {@link DialFailure} naming the reason (address_class, self_loop, dns_failure,
     *         upstream_connect_failed, upstream_timeout)
     */
    public Future<Dialed> dial(EventLoop loop, Policy policy, Decision nameDecision, Target target,
                               ChannelHandler initializer) {
        Promise<Dialed> promise = loop.newPromise();
        resolve(loop, policy, target).addListener((Future<List<InetAddress>> resolved) -> {
            if (!resolved.isSuccess()) {
                promise.tryFailure(new DialFailure(Decision.deny(Reason.DNS_FAILURE, BuiltinRules.DNS), null,
                        "no address for " + target.host()));
                return;
            }
            AddressDecision checked = Decider.checkAddresses(policy, nameDecision, target, resolved.getNow(),
                    self.get());
            if (!checked.decision().permits() || checked.dialAddress() == null) {
                promise.tryFailure(new DialFailure(checked.decision(), checked, checked.decision().reasonText()));
                return;
            }
            InetSocketAddress remote = new InetSocketAddress(checked.dialAddress(), target.port());
            ChannelFuture connect = new Bootstrap()
                    .group(loop)
                    .channel(transport.socketChannel())
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.AUTO_READ, false)
                    .handler(initializer)
                    .connect(remote);
            connect.addListener((ChannelFuture f) -> {
                if (f.isSuccess()) {
                    if (f.channel().localAddress() instanceof InetSocketAddress local) {
                        ownLocalEnds.add(local);
                        f.channel().closeFuture().addListener(closed -> ownLocalEnds.remove(local));
                    }
                    if (!promise.trySuccess(new Dialed(f.channel(), checked, remote))) {
                        f.channel().close();
                    }
                } else {
                    Reason reason = f.cause() instanceof ConnectTimeoutException
                            ? Reason.UPSTREAM_TIMEOUT : Reason.UPSTREAM_CONNECT_FAILED;
                    promise.tryFailure(new DialFailure(Decision.deny(reason, BuiltinRules.CONNECT), checked,
                            reason.label() + " " + remote.getAddress().getHostAddress() + ":" + remote.getPort()));
                }
            });
        });
        return promise;
    }

    private Future<List<InetAddress>> resolve(EventLoop loop, Policy policy, Target target) {
        if (target.isIpLiteral()) {
            return loop.newSucceededFuture(List.of(target.address()));
        }
        InetAddress pinned = policy.network().hosts().get(target.host());
        if (pinned != null) {
            return loop.newSucceededFuture(List.of(pinned));
        }
        return resolver(loop, policy.network().resolvers()).resolveAll(target.host());
    }

    private DnsNameResolver resolver(EventLoop loop, List<InetSocketAddress> servers) {
        return resolvers.computeIfAbsent(new ResolverKey(loop, servers), key -> {
            DnsServerAddressStreamProvider provider = servers.isEmpty()
                    ? DnsServerAddressStreamProviders.platformDefault()
                    : new SequentialDnsServerAddressStreamProvider(servers.toArray(new InetSocketAddress[0]));
            return new DnsNameResolverBuilder(loop)
                    .datagramChannelType(transport.datagramChannel())
                    .socketChannelType(transport.socketChannel())
                    .nameServerProvider(provider)
                    .queryTimeoutMillis(DEFAULT_DNS_QUERY_TIMEOUT_MILLIS)
                    .resolvedAddressTypes(ResolvedAddressTypes.IPV4_PREFERRED)
                    .build();
        });
    }

    /**
     * Answers whether {@code client} (a downstream connection's remote address) is the local end of one
     * of Sluice's own upstream connections: that connection was sent back into Sluice (for example by
     * an iptables rule that redirects Sluice's own output) and must not be dialled again (a loop).
     * An upstream socket is registered as soon as it is connected, before the promise of
     * {@link #dial} completes, so before any byte is written on it.
     */
    public boolean isOwnUpstream(InetSocketAddress client) {
        return client != null && ownLocalEnds.contains(client);
    }

    /** Closes every resolver. */
    @Override
    public void close() {
        resolvers.values().forEach(DnsNameResolver::close);
        resolvers.clear();
    }

    private record ResolverKey(EventLoop loop, List<InetSocketAddress> servers) {
    }
}
