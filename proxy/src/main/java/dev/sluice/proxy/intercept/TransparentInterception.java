package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.dial.DialFailure;
import dev.sluice.proxy.dial.Dialed;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.InterceptionPath;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.Target;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.util.concurrent.Future;
import java.util.List;
import java.util.Optional;

/**
 * Interception on the transparent listener: for a TLS connection whose SNI names an inspected host,
 * dials the checked address (as a CONNECT would) and hands the connection, ClientHello first, to
 * {@link Interception}. A failed dial closes the connection with its audit record (address_class,
 * self_loop, dns_failure, upstream_connect_failed, upstream_timeout).
 */
public final class TransparentInterception implements InterceptionPath {

    private final ProxyContext context;

    public TransparentInterception(ProxyContext context) {
        this.context = context;
    }

    @Override
    public boolean available() {
        return context.interception() != null;
    }

    @Override
    public void intercept(ChannelHandlerContext ctx, ConnectRequest request, ByteBuf clientHello) {
        Channel downstream = ctx.channel();
        AuditEvent audit = request.audit();
        Optional<InspectedHost> inspected = Optional.ofNullable(request.decision().inspected());
        ByteCounter counter = new ByteCounter();
        counter.attach(audit, request.traffic());
        Future<Dialed> dial = context.dialer().dial(downstream.eventLoop(), request.policy(), request.decision(),
                request.target(), new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast("bytes", counter);
                    }
                });
        dial.addListener((Future<Dialed> f) -> {
            if (!downstream.isActive() || inspected.isEmpty()) {
                if (f.isSuccess()) {
                    f.getNow().channel().close();
                }
                clientHello.release();
                audit.error("downstream closed before interception started");
                audit.emit();
                downstream.close();
                return;
            }
            if (!f.isSuccess()) {
                Decision denial = f.cause() instanceof DialFailure failure
                        ? failure.decision() : Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.CONNECT);
                audit.decision(denial)
                        .error(f.cause().getMessage());
                audit.emit();
                clientHello.release();
                downstream.close();
                return;
            }
            Dialed dialed = f.getNow();
            audit.peerAddress(dialed.remote().getAddress().getHostAddress());
            Interception.start(context, downstream, dialed.channel(), counter, request.target(), request.policy(),
                    request.extension(), inspected.get(), audit, request.traffic(), List.of(clientHello),
                    request.listener());
        });
    }
}
