package dev.sluice.proxy.transparent;

import dev.sluice.proxy.exchange.InterceptionPath;

import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.rules.policy.Limits;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.timeout.IdleStateHandler;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Builds the pipeline of a connection accepted on the transparent listener (docs/transparent.md).
 * It starts with one phase that reads the first bytes:
 * <pre>
 *   idle            (IdleStateHandler: limits.idle_timeout)
 *   header-deadline (HeaderDeadline: limits.header_timeout, until a ClientHello or request head is complete)
 *   peek            (FirstBytesHandler: TLS ClientHello, HTTP/1.x request, or neither)
 * </pre>
 * and the peek phase replaces itself with the phase that fits:
 * <pre>
 *   TLS:  tunnel (TransparentTunnelHandler: decide on the SNI, dial, then TunnelRelay), or the
 *         {@link InterceptionPath} for inspected hosts
 *   HTTP: decoder, encoder, request (ExplicitRequestHandler with a {@link TransparentFront}), forward
 *         (HttpForwarder) — the explicit listener's plain-HTTP path, fed origin-form requests
 * </pre>
 */
public final class TransparentChannelInitializer extends ChannelInitializer<Channel> {

    /** Pipeline name of the peek phase. */
    public static final String PEEK = "peek";
    /** Pipeline name of the TLS tunnel phase. */
    public static final String TUNNEL = "tunnel";

    private final ProxyContext context;
    private final InterceptionPath interception;

    /**
     * @param context the server's shared context
     * @param interception where inspected hosts go ({@link InterceptionPath#NONE} until interception exists)
     */
    public TransparentChannelInitializer(ProxyContext context, InterceptionPath interception) {
        this.context = Objects.requireNonNull(context, "context");
        this.interception = Objects.requireNonNull(interception, "interception");
    }

    @Override
    protected void initChannel(Channel ch) {
        Limits limits = context.policies().current().limits();
        ch.pipeline()
                .addLast(HttpPipeline.IDLE,
                        new IdleStateHandler(true, 0, 0, limits.idleTimeout().toMillis(), TimeUnit.MILLISECONDS))
                .addLast(HttpPipeline.HEADER_DEADLINE, new HeaderDeadline(limits.headerTimeout().toMillis()))
                .addLast(PEEK, new FirstBytesHandler(context, interception, limits.maxHeaderBytes()));
    }
}
