package dev.sluice.proxy.forward;

import dev.sluice.rules.policy.Policy;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One HTTP/2 (RFC 9113) upstream connection to an intercepted origin that chose {@code h2} by ALPN,
 * shared by the exchanges of one downstream connection: Netty's client {@link Http2FrameCodec} and
 * {@link Http2MultiplexHandler} on the TLS connection (its trust and pin check done), and one child
 * channel per exchange ({@link #openStream}) whose pipeline is
 * <pre>
 *   bytes     ByteCounter: the stream's DATA bytes into the exchange's record
 *   codec     Http2StreamFrameToHttpObjectCodec (client): HttpRequest/HttpContent out, HttpResponse/HttpContent in
 *   h2-head   a whole response (HEADERS with END_STREAM) split into its head and last content
 *   response  the forwarder's response handler
 * </pre>
 * so the forwarder keeps writing and reading {@code HttpObject}s. Server push is off
 * (SETTINGS_ENABLE_PUSH 0); response header lists up to {@link HttpForwarder#MAX_RESPONSE_HEADER_BYTES}
 * are accepted, as on HTTP/1.1. A stream is opened only while the origin's SETTINGS_MAX_CONCURRENT_STREAMS
 * allows one and no GOAWAY has arrived ({@link #usable}); otherwise the forwarder dials a new connection.
 * All calls on the connection's event loop.
 */
final class H2Upstream {

    private static final Logger log = LoggerFactory.getLogger(H2Upstream.class);


    private final Channel channel;
    private final Http2FrameCodec codec;
    private final String authority;
    private final Policy policy;
    private final dev.sluice.certs.PinResult pin;

    private H2Upstream(Channel channel, Http2FrameCodec codec, String authority, Policy policy,
                       dev.sluice.certs.PinResult pin) {
        this.channel = channel;
        this.codec = codec;
        this.authority = authority;
        this.policy = policy;
        this.pin = pin;
    }

    /**
     * Adds the HTTP/2 client handlers after the handler named {@code after} of {@code channel}, whose
     * TLS handshake chose {@code h2}, and returns the connection.
     */
    static H2Upstream install(Channel channel, String after, String authority, Policy policy,
                               dev.sluice.certs.PinResult pin) {
        Http2FrameCodec codec = Http2FrameCodecBuilder.forClient()
                .initialSettings(Http2Settings.defaultSettings()
                        .pushEnabled(false)
                        .maxHeaderListSize(HttpForwarder.MAX_RESPONSE_HEADER_BYTES))
                .validateHeaders(true)
                .build();
        channel.pipeline().addAfter(after, "h2", codec);
        channel.pipeline().addAfter("h2", "h2-multiplex", new Http2MultiplexHandler(new Refused()));
        channel.pipeline().addAfter("h2-multiplex", "h2-connection", new ConnectionEnd());
        return new H2Upstream(channel, codec, authority, policy, pin);
    }

    /** Returns the connection's channel (TLS over TCP to the origin). */
    Channel channel() {
        return channel;
    }

    String authority() {
        return authority;
    }

    Policy policy() {
        return policy;
    }

    /** Returns the pin check of the connection's handshake. */
    dev.sluice.certs.PinResult pin() {
        return pin;
    }

    /** Whether a stream may be opened now: open, no GOAWAY from the origin, under its stream limit. */
    boolean usable() {
        return channel.isActive() && !codec.connection().goAwayReceived() && !codec.connection().goAwaySent()
                && codec.connection().local().canOpenStream();
    }

    /** Whether this connection serves {@code authority} under {@code policy} (the snapshot that dialled it). */
    boolean serves(String authority, Policy policy) {
        return this.authority.equals(authority) && this.policy == policy;
    }

    /**
     * Opens a stream for one exchange; its pipeline gets {@code bytes} ({@code counter}), the HTTP
     * object codec, the whole-response splitter and {@code response}.
     */
    Future<Http2StreamChannel> openStream(ChannelHandler counter, ChannelHandler response) {
        return new Http2StreamChannelBootstrap(channel).handler(new io.netty.channel.ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                ch.pipeline().addLast("bytes", counter);
                ch.pipeline().addLast("codec", new Http2StreamFrameToHttpObjectCodec(false, true));
                ch.pipeline().addLast("h2-head", new WholeResponseSplit());
                ch.pipeline().addLast("response", response);
            }
        }).open();
    }

    /** Streams the origin opens (server push is off, so none should come) are closed at once. */
    @ChannelHandler.Sharable
    private static final class Refused extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.close();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }
    }

    /**
     * The connection's end: connection-level frames that reach it (SETTINGS, PING, GOAWAY; the
     * multiplexer already told the streams) are released; an error closes the connection, its streams
     * with it.
     */
    private static final class ConnectionEnd extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            ReferenceCountUtil.release(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("h2 upstream {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }
    }

    /**
     * Splits a {@link FullHttpResponse} (HEADERS with END_STREAM, or a response the codec aggregated)
     * into its head and its last content, as HTTP/1.1's decoder hands them to the forwarder; a head
     * with neither {@code content-length} nor chunked framing whose body is not empty gets its length
     * (an empty one stays without: it may answer a HEAD).
     */
    private static final class WholeResponseSplit extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof FullHttpResponse full) {
                HttpResponse head = new DefaultHttpResponse(full.protocolVersion(), full.status(), full.headers());
                head.setDecoderResult(full.decoderResult());
                int code = full.status().code();
                if (!HttpUtil.isContentLengthSet(head) && !HttpUtil.isTransferEncodingChunked(head)
                        && full.content().isReadable() && code >= 200 && code != 204 && code != 304) {
                    HttpUtil.setContentLength(head, full.content().readableBytes());
                }
                ctx.fireChannelRead(head);
                ctx.fireChannelRead(new DefaultLastHttpContent(full.content(), full.trailingHeaders()));
                return;
            }
            ctx.fireChannelRead(msg);
        }
    }
}
