package dev.sluice.proxy.explicit;

import dev.sluice.proxy.forward.HttpForwarder;
import dev.sluice.proxy.server.ProxyContext;
import dev.sluice.proxy.tunnel.ConnectHandler;
import dev.sluice.rules.policy.Limits;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpResponseEncoder;
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

    /** Pipeline name of the idle timeout ({@code limits.idle_timeout}, reads and writes both count). */
    public static final String IDLE = "idle";
    /** Pipeline name of the header timeout (removed when a CONNECT tunnel starts). */
    public static final String HEADER_DEADLINE = "header-deadline";
    /** Pipeline name of the request decoder (removed when a CONNECT tunnel starts). */
    public static final String DECODER = "decoder";
    /** Pipeline name of the response encoder. */
    public static final String ENCODER = "encoder";
    /** Pipeline name of the request phase. */
    public static final String REQUEST = "request";
    /** Pipeline name of the forwarding phase. */
    public static final String FORWARD = "forward";
    /** Pipeline name of the tunnel set-up phase. */
    public static final String CONNECT = "connect";

    /** Longest request line accepted, in bytes. */
    static final int MAX_INITIAL_LINE_BYTES = 16_384;
    /** Largest body chunk handed on at once, in bytes (bodies stream in chunks of at most this size). */
    static final int MAX_CHUNK_BYTES = 65_536;

    private final ProxyContext context;

    public ExplicitChannelInitializer(ProxyContext context) {
        this.context = context;
    }

    /** Returns the request decoder settings for {@code limits} (header block limit, chunk size). */
    public static HttpDecoderConfig decoderConfig(Limits limits) {
        return new HttpDecoderConfig()
                .setMaxInitialLineLength(MAX_INITIAL_LINE_BYTES)
                .setMaxHeaderSize(limits.maxHeaderBytes())
                .setMaxChunkSize(MAX_CHUNK_BYTES)
                .setStrictLineParsing(true);
    }

    /** Returns a new strict request decoder (Content-Length with Transfer-Encoding is refused). */
    public static ChannelHandler newDecoder(HttpDecoderConfig config) {
        return new StrictRequestDecoder(config);
    }

    @Override
    protected void initChannel(Channel ch) {
        Limits limits = context.policies().current().limits();
        HttpDecoderConfig config = decoderConfig(limits);
        ch.pipeline()
                .addLast(IDLE, new IdleStateHandler(true, 0, 0, limits.idleTimeout().toMillis(), TimeUnit.MILLISECONDS))
                .addLast(HEADER_DEADLINE, new HeaderDeadline(limits.headerTimeout().toMillis()))
                .addLast(DECODER, new StrictRequestDecoder(config))
                .addLast(ENCODER, new HttpResponseEncoder())
                .addLast(REQUEST, new ExplicitRequestHandler(context))
                .addLast(FORWARD, new HttpForwarder(context))
                .addLast(CONNECT, new ConnectHandler(context, HEADER_DEADLINE, ENCODER, REQUEST, FORWARD));
    }
}
