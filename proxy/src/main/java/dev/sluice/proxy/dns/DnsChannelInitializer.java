package dev.sluice.proxy.dns;

import dev.sluice.proxy.server.ProxyContext;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.dns.DatagramDnsQueryDecoder;
import io.netty.handler.codec.dns.DatagramDnsResponseEncoder;
import java.net.InetAddress;
import java.util.Objects;

/**
 * Builds the pipeline of the DNS responder's UDP socket ({@code listen.dns}):
 * <pre>
 *   decoder  (DatagramDnsQueryDecoder: RFC 1035 section 4 messages from datagrams)
 *   encoder  (DatagramDnsResponseEncoder)
 *   query    (DnsQueryHandler: identify, decide on the name, answer; never forwards)
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

    @Override
    protected void initChannel(Channel ch) {
        ch.pipeline()
                .addLast("decoder", new DatagramDnsQueryDecoder())
                .addLast("encoder", new DatagramDnsResponseEncoder())
                .addLast("query", new DnsQueryHandler(context, answer));
    }
}
