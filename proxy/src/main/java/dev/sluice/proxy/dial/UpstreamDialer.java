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
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.proxy.HttpProxyHandler;
import io.netty.resolver.NoopAddressResolverGroup;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.policy.UpstreamProxy;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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

    /** Name of the byte counter every owner puts first in an upstream pipeline. */
    static final String BYTES = "bytes";
    /** Name of the parent-proxy handler in an upstream pipeline. */
    public static final String PARENT_PROXY = "parent-proxy";
    static final String PARENT_HOLD = "parent-hold";
    /** The status in HttpProxyHandler's failure message ("..., status: 407 Proxy Authentication Required"). */
    private static final Pattern PARENT_STATUS = Pattern.compile("status: ([0-9]{3})[^,]*");

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
        return dial(loop, policy, nameDecision, target, initializer, UpstreamKind.TUNNEL);
    }

    /**
     * As {@link #dial(EventLoop, Policy, Decision, Target, ChannelHandler)}, for an upstream connection
     * of {@code kind}: when the policy's {@code upstream_proxy} has a parent for that kind and no
     * {@code no_proxy} entry covers the target, the channel connects to the parent instead and asks it
     * {@code CONNECT target} (Netty's {@link HttpProxyHandler}, RFC 9110 section 9.3.6) with the
     * parent's Basic credentials (RFC 7617); the returned future completes once the parent answered
     * 200. Under {@code connect_by: address} the CONNECT names the checked address (never a name the
     * parent would resolve again); under {@code hostname} it names the canonical host and Sluice does
     * not resolve names (IP literals are still checked). {@code ByteCounter} stays first in the pipeline,
     * so the CONNECT exchange with the parent is counted; bytes the parent relays right after its 200
     * are held ({@link ParentHold}) until the owner first reads.
     *
     * @return as above; a parent failure fails with {@link Reason#UPSTREAM_PROXY_AUTH} (the parent
     *         answered 407) or {@link Reason#UPSTREAM_PROXY_FAILED} (unreachable, timed out, closed, or
     *         another status, which the failure's message names)
     */
    public Future<Dialed> dial(EventLoop loop, Policy policy, Decision nameDecision, Target target,
                               ChannelHandler initializer, UpstreamKind kind) {
        Promise<Dialed> promise = loop.newPromise();
        UpstreamProxy upstream = policy.upstreamProxy();
        boolean plainHttp = kind == UpstreamKind.PLAIN_HTTP;
        if (upstream.configured() && upstream.connectBy() == UpstreamProxy.ConnectBy.HOSTNAME
                && !target.isIpLiteral()) {
            UpstreamProxy.Parent parent = upstream.parentFor(plainHttp, target, null);
            if (parent != null) {
                viaParent(promise, loop, policy, parent,
                        InetSocketAddress.createUnresolved(target.host(), target.port()), null, initializer);
                return promise;
            }
        }
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
            UpstreamProxy.Parent parent = upstream.configured()
                    ? upstream.parentFor(plainHttp, target, checked.dialAddress()) : null;
            if (parent != null) {
                viaParent(promise, loop, policy, parent, remote, checked, initializer);
                return;
            }
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

    private void viaParent(Promise<Dialed> promise, EventLoop loop, Policy policy, UpstreamProxy.Parent parent,
                           InetSocketAddress destination, AddressDecision checked, ChannelHandler initializer) {
        resolveParent(loop, policy, parent).addListener((Future<InetAddress> found) -> {
            if (!found.isSuccess()) {
                promise.tryFailure(parentFailure(Reason.UPSTREAM_PROXY_FAILED, checked,
                        "parent " + parent + ": no address"));
                return;
            }
            InetSocketAddress parentAddress = new InetSocketAddress(found.getNow(), parent.port());
            if (self.get().isSelf(parentAddress.getAddress(), parentAddress.getPort())) {
                // A parent that is Sluice's own listener would send every connection round in a loop.
                promise.tryFailure(parentFailure(Reason.UPSTREAM_PROXY_FAILED, checked,
                        "parent " + parent + " is Sluice's own listener"));
                return;
            }
            UpstreamProxy.ParentCredentials credentials = policy.upstreamProxy().credentials();
            HttpProxyHandler proxy = credentials == null
                    ? new HttpProxyHandler(parentAddress)
                    : new HttpProxyHandler(parentAddress, credentials.username(), credentials.password());
            proxy.setConnectTimeoutMillis(connectTimeoutMillis);
            ChannelFuture connect = new Bootstrap()
                    .group(loop)
                    .channel(transport.socketChannel())
                    .resolver(NoopAddressResolverGroup.INSTANCE)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.AUTO_READ, false)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ChannelPipeline p = ch.pipeline();
                            p.addLast(initializer);
                            // Behind the byte counter (which counts the CONNECT exchange too), in front
                            // of everything the owner installed (upstream TLS rides inside the tunnel).
                            if (p.get(BYTES) != null) {
                                p.addAfter(BYTES, PARENT_PROXY, proxy);
                            } else {
                                p.addFirst(PARENT_PROXY, proxy);
                            }
                            p.addAfter(PARENT_PROXY, PARENT_HOLD, new ParentHold());
                        }
                    })
                    .connect(destination);
            // What the record names as the peer: the checked address the parent was asked for, or the
            // parent itself when Sluice sent a name.
            InetSocketAddress peer = destination.isUnresolved() ? parentAddress : destination;
            connect.addListener((ChannelFuture f) -> {
                if (!f.isSuccess()) {
                    String why = f.cause() instanceof ConnectTimeoutException ? "timed out" : "unreachable";
                    promise.tryFailure(parentFailure(Reason.UPSTREAM_PROXY_FAILED, checked,
                            "parent " + parent + " " + why));
                    return;
                }
                Channel ch = f.channel();
                if (ch.localAddress() instanceof InetSocketAddress local) {
                    ownLocalEnds.add(local);
                    ch.closeFuture().addListener(closed -> ownLocalEnds.remove(local));
                }
                proxy.connectFuture().addListener((Future<Channel> tunnel) -> {
                    if (tunnel.isSuccess()) {
                        if (!promise.trySuccess(new Dialed(ch, checked, peer))) {
                            ch.close();
                        }
                        return;
                    }
                    ch.close();
                    promise.tryFailure(parentAnswer(parent, checked, tunnel.cause()));
                });
            });
        });
    }

    /** Maps the proxy handler's failure to a reason; the message names the parent and its status only. */
    private static DialFailure parentAnswer(UpstreamProxy.Parent parent, AddressDecision checked, Throwable cause) {
        String message = cause == null || cause.getMessage() == null ? "" : cause.getMessage();
        Matcher status = PARENT_STATUS.matcher(message);
        if (cause instanceof HttpProxyHandler.HttpProxyConnectException && status.find()) {
            int code = Integer.parseInt(status.group(1));
            String answered = "parent " + parent + " answered " + sanitize(status.group(0).substring(8));
            return parentFailure(code == 407 ? Reason.UPSTREAM_PROXY_AUTH : Reason.UPSTREAM_PROXY_FAILED,
                    checked, answered);
        }
        String why = message.endsWith(", timeout") ? "timed out"
                : message.endsWith(", disconnected") ? "closed the connection" : "failed";
        return parentFailure(Reason.UPSTREAM_PROXY_FAILED, checked, "parent " + parent + " " + why);
    }

    private static String sanitize(String text) {
        StringBuilder b = new StringBuilder(Math.min(text.length(), 80));
        for (int i = 0; i < text.length() && b.length() < 80; i++) {
            char c = text.charAt(i);
            b.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return b.toString();
    }

    private static DialFailure parentFailure(Reason reason, AddressDecision checked, String detail) {
        return new DialFailure(Decision.deny(reason, BuiltinRules.UPSTREAM_PROXY), checked, detail);
    }

    private Future<InetAddress> resolveParent(EventLoop loop, Policy policy, UpstreamProxy.Parent parent) {
        InetAddress literal = IpAddresses.parseStrict(parent.host());
        if (literal != null) {
            return loop.newSucceededFuture(literal);
        }
        InetAddress pinned = policy.network().hosts().get(parent.host());
        if (pinned != null) {
            return loop.newSucceededFuture(pinned);
        }
        return resolver(loop, policy.network().resolvers()).resolve(parent.host());
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
