package dev.sluice.proxy.explicit;

import dev.sluice.proxy.http.HeaderDeadline;
import dev.sluice.proxy.request.ExplicitRequestHandler;

import dev.sluice.proxy.forward.HttpForwarder;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.tunnel.ConnectHandler;
import dev.sluice.rules.policy.Limits;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.intercept.CredentialPhase;
import io.netty.handler.timeout.IdleStateHandler;
import java.util.concurrent.TimeUnit;

/**
 * Builds the pipeline of a connection accepted on the explicit listener, one handler per phase:
 * <pre>
 *   idle     (IdleStateHandler: limits.idle_timeout over reads and writes)
 *   header-deadline (HeaderDeadline: limits.header_timeout)
 *   decoder  (StrictRequestDecoder: HTTP/1.x request parsing, header limit)
 *   encoder  (HttpResponseEncoder)
 *   request  (ExplicitRequestHandler: identify, canonicalise, decide)
 *   forward  (HttpForwarder: plain HTTP exchanges)
 *   connect  (ConnectHandler: CONNECT tunnel set-up, then replaced by a TunnelRelay)
 * </pre>
 */
public final class ExplicitChannelInitializer extends ChannelInitializer<Channel> {

    /** Pipeline name of the idle timeout; see {@link HttpPipeline} for the others. */
    public static final String IDLE = HttpPipeline.IDLE;

    private final ProxyContext context;

    public ExplicitChannelInitializer(ProxyContext context) {
        this.context = context;
    }

    @Override
    protected void initChannel(Channel ch) {
        Limits limits = context.policies().current().limits();
        ChannelPipeline p = ch.pipeline()
                .addLast(HttpPipeline.IDLE, new IdleStateHandler(true, 0, 0, limits.idleTimeout().toMillis(),
                        TimeUnit.MILLISECONDS))
                .addLast(HttpPipeline.HEADER_DEADLINE, new HeaderDeadline(limits.headerTimeout().toMillis()));
        HttpPipeline.install(p, HttpPipeline.HEADER_DEADLINE, limits, new ExplicitRequestHandler(context), null,
                context.credentials() == null ? null : new CredentialPhase(context.credentials(), false),
                new HttpForwarder(context));
        p.addLast(HttpPipeline.CONNECT, new ConnectHandler(context, HttpPipeline.HEADER_DEADLINE, HttpPipeline.ENCODER,
                HttpPipeline.REQUEST, HttpPipeline.CREDENTIALS, HttpPipeline.FORWARD));
    }
}
