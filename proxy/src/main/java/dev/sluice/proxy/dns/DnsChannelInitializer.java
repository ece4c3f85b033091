package dev.sluice.proxy.dns;

import dev.sluice.proxy.core.ProxyContext;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import io.netty.handler.codec.dns.TcpDnsQueryDecoder;
import io.netty.handler.codec.dns.TcpDnsResponseEncoder;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import java.util.concurrent.TimeUnit;
import java.net.InetAddress;
import java.util.Objects;

/**
 * Builds the pipeline of the DNS responder ({@code listen.dns}), on its UDP socket:
 * <pre>
 *   decoder  (DatagramDnsQueryDecoder: RFC 1035 section 4 messages from datagrams)
 *   encoder  (DatagramDnsResponseEncoder)
 *   query    (DnsQueryHandler: identify, decide on the name, answer; never forwards)
 * </pre>
 * and on each TCP connection to the same address and port (RFC 7766; 2-byte length prefix, RFC 1035
 * section 4.2.2), with an idle timeout of {@value #TCP_IDLE_SECONDS} s:
 * <pre>
 *   idle, decoder (TcpDnsQueryDecoder), encoder (TcpDnsResponseEncoder), query (DnsQueryHandler)
 * </pre>
 */
public final class DnsChannelInitializer extends ChannelInitializer<Channel> {

    private final ProxyContext context;
    private final InetAddress answer;

    /**
     * @param context the server's shared context
     * @param answer the address allowed names resolve to: the transparent listener's address
     */
    public DnsChannelInitializer(ProxyContext context, InetAddress answer) {
        this.context = Objects.requireNonNull(context, "context");
        this.answer = Objects.requireNonNull(answer, "answer");
    }

    /** How long an idle TCP connection to the responder stays open, in seconds. */
    public static final int TCP_IDLE_SECONDS = 10;

    @Override
    protected void initChannel(Channel ch) {
        if (ch instanceof SocketChannel) {
            ch.pipeline()
                    .addLast("idle", new IdleStateHandler(0, 0, TCP_IDLE_SECONDS, TimeUnit.SECONDS) {
                        @Override
                        protected void channelIdle(ChannelHandlerContext ctx, IdleStateEvent evt) {
                            ctx.close();
                        }
                    })
                    .addLast("decoder", new TcpDnsQueryDecoder())
                    .addLast("encoder", new TcpDnsResponseEncoder())
                    .addLast("query", new DnsQueryHandler(context, answer));
            return;
        }
        ch.pipeline()
                .addLast("decoder", new DatagramDnsQueryDecoder())
                .addLast("encoder", new DatagramDnsResponseEncoder())
                .addLast("query", new DnsQueryHandler(context, answer));
    }
}
