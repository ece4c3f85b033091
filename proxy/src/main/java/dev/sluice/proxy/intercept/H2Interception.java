package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.http.Answers;
import dev.sluice.proxy.http.ProxyStatus;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionDecoder;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamFrameToHttpObjectCodec;
import io.netty.handler.codec.http2.HttpConversionUtil;
import io.netty.handler.timeout.IdleStateEvent;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * HTTP/2 (RFC 9113) on the downstream leg of an intercepted host, when the client's ALPN chose
 * {@code h2}: Netty's {@link Http2FrameCodec} and {@link Http2MultiplexHandler} give each stream a
 * child channel whose pipeline is
 * <pre>
 *   h2-http     Http2StreamFrameToHttpObjectCodec (the stream's frames as HttpRequest/HttpContent)
 *   h2-request  request head: the codec's x-http2-* fields dropped, a body without a length chunked
 *               (for an HTTP/1.1 upstream leg), a whole request split into head and last content
 *   request, [redact], forward   the same phases as an HTTP/1.1 connection (HttpPipeline.installPhases)
 * </pre>
 * so each stream is decided, redacted, forwarded and audited (one record) exactly as an HTTP/1.1
 * request. Upstream, TLS offers the origin h2 and http/1.1 (pins checked on every connection): with h2,
 * the streams become streams of one upstream connection (forward.H2Upstreams); with http/1.1, each
 * stream's forwarder has its own upstream connection while it runs, taken from the connection's
 * UpstreamPool of kept-alive ones or dialled anew.
 *
 * <p>Limits (frame-level, Netty's): {@link #MAX_CONCURRENT_STREAMS} concurrent streams; header list
 * size {@code limits.max_header_bytes} (SETTINGS_MAX_HEADER_LIST_SIZE; a stream over it is answered 431
 * {@code header_too_large} with its audit record; over 1.25 times it, Netty ends the connection);
 * rapid reset ({@link #MAX_RST_FRAMES} RST_STREAM per {@link #RST_WINDOW_SECONDS} s, CVE-2023-44487),
 * {@link #MAX_EMPTY_DATA_FRAMES} consecutive empty DATA frames, {@link #MAX_SMALL_CONTINUATION_FRAMES}
 * small CONTINUATION frames, and {@link #MAX_QUEUED_CONTROL_FRAMES} queued control-frame answers
 * (SETTINGS/PING floods). A connection error (a flood among them) ends the connection with GOAWAY and
 * puts one error line in the tunnel's audit record.
 */
final class H2Interception {

    private static final Logger log = LoggerFactory.getLogger(H2Interception.class);

    /** Pipeline name of the frame codec. */
    static final String CODEC = "h2";
    /** Pipeline name of the stream multiplexer. */
    static final String MULTIPLEX = "h2-multiplex";
    /** Pipeline name, in a stream's child pipeline, of the answer to a head the h2-to-HTTP conversion refuses. */
    static final String HEAD_FAILURE = "h2-head-failure";
    /** Pipeline name of the connection's last handler (connection errors, idle timeout). */
    static final String CONNECTION = "h2-connection";

    /** SETTINGS_MAX_CONCURRENT_STREAMS sent to the client. */
    static final int MAX_CONCURRENT_STREAMS = 100;
    /** RST_STREAM frames accepted from the client per window before GOAWAY (rapid reset). */
    static final int MAX_RST_FRAMES = 200;
    /** The rapid-reset window, in seconds. */
    static final int RST_WINDOW_SECONDS = 30;
    /** Consecutive empty DATA frames accepted before GOAWAY. */
    static final int MAX_EMPTY_DATA_FRAMES = 2;
    /** Small CONTINUATION frames accepted for one header block before GOAWAY (CONTINUATION flood). */
    static final int MAX_SMALL_CONTINUATION_FRAMES = 16;
    /** Control frames (SETTINGS acks, PING acks, RST_STREAM) queued for a client that does not read. */
    static final int MAX_QUEUED_CONTROL_FRAMES = 10_000;

    /** How a stream's child pipeline gets the shared request phases, after the handler named {@code after}. */
    interface StreamPhases {
        void install(ChannelPipeline pipeline, String after);
    }

    private H2Interception() {
    }

    /**
     * Adds the HTTP/2 connection handlers after the handler named {@code after} of an intercepted
     * connection whose TLS handshake chose {@code h2}.
     *
     * @param pipeline the downstream connection's pipeline (its HTTP/1.1 phases already removed)
     * @param after the handler the HTTP/2 handlers follow
     * @param maxHeaderBytes {@code limits.max_header_bytes}: the header list size limit, in bytes
     *     (RFC 9113 section 6.5.2: names, values and 32 bytes per field)
     * @param phases installs a stream's request phases
     * @param streamAudit a new audit record for a stream of this connection (extension, target, client)
     * @param tunnelAudit the tunnel's record, which gets the error line of a connection error
     */
    static void install(ChannelPipeline pipeline, String after, int maxHeaderBytes, StreamPhases phases,
                        Supplier<AuditEvent> streamAudit, AuditEvent tunnelAudit) {
        Http2Settings settings = Http2Settings.defaultSettings()
                .maxConcurrentStreams(MAX_CONCURRENT_STREAMS)
                .maxHeaderListSize(maxHeaderBytes);
        // ids of the streams that got a child channel (so a request phase and a record of their own)
        java.util.Set<Integer> opened = new java.util.HashSet<>();
        Http2FrameCodec codec = new Builder(streamAudit, tunnelAudit, maxHeaderBytes, opened)
                .initialSettings(settings)
                .validateHeaders(true)
                .decoderEnforceMaxRstFramesPerWindow(MAX_RST_FRAMES, RST_WINDOW_SECONDS)
                .decoderEnforceMaxConsecutiveEmptyDataFrames(MAX_EMPTY_DATA_FRAMES)
                .decoderEnforceMaxSmallContinuationFrames(MAX_SMALL_CONTINUATION_FRAMES)
                .encoderEnforceMaxQueuedControlFrames(MAX_QUEUED_CONTROL_FRAMES)
                .build();
        pipeline.addAfter(after, CODEC, codec);
        pipeline.addAfter(CODEC, MULTIPLEX, new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
            @Override
            protected void initChannel(Http2StreamChannel ch) {
                int id = ch.stream().id();
                opened.add(id);
                ch.closeFuture().addListener(f -> opened.remove(id));
                ch.pipeline().addLast("h2-http", new Http2StreamFrameToHttpObjectCodec(true, true));
                ch.pipeline().addLast(HEAD_FAILURE, new StreamHeadFailure(streamAudit));
                ch.pipeline().addLast("h2-request", new StreamRequestHead());
                phases.install(ch.pipeline(), "h2-request");
            }
        }));
        pipeline.addAfter(MULTIPLEX, CONNECTION, new ConnectionEnd(codec, tunnelAudit));
    }

    /** Builds {@link Codec}, Netty's frame codec with Sluice's answers to header-size and connection errors. */
    private static final class Builder extends Http2FrameCodecBuilder {
        private final Supplier<AuditEvent> streamAudit;
        private final AuditEvent tunnelAudit;
        private final int maxHeaderBytes;
        private final java.util.Set<Integer> opened;

        Builder(Supplier<AuditEvent> streamAudit, AuditEvent tunnelAudit, int maxHeaderBytes,
                java.util.Set<Integer> opened) {
            this.streamAudit = streamAudit;
            this.tunnelAudit = tunnelAudit;
            this.maxHeaderBytes = maxHeaderBytes;
            this.opened = opened;
            server(true);
            gracefulShutdownTimeoutMillis(0);
        }

        @Override
        protected Http2FrameCodec build(Http2ConnectionDecoder decoder, Http2ConnectionEncoder encoder,
                                        Http2Settings initialSettings) {
            Codec codec = new Codec(encoder, decoder, initialSettings, decoupleCloseAndGoAway(), flushPreface(),
                    streamAudit, tunnelAudit, maxHeaderBytes, opened);
            codec.gracefulShutdownTimeoutMillis(gracefulShutdownTimeoutMillis());
            return codec;
        }
    }

    /**
     * The frame codec: a stream whose header list is over the limit gets 431 {@code header_too_large}
     * (with the usual X-Sluice-Reason and Proxy-Status fields) and its audit record; a connection
     * error puts one error line in the tunnel's record (Netty then sends GOAWAY and closes).
     */
    private static final class Codec extends Http2FrameCodec {
        private final Supplier<AuditEvent> streamAudit;
        private final AuditEvent tunnelAudit;
        private final int maxHeaderBytes;
        private final java.util.Set<Integer> opened;
        /** Streams refused before they got a child channel, already recorded (a later frame on one is not). */
        private final java.util.Set<Integer> refusedUnopened = new java.util.HashSet<>();
        private boolean reported;

        Codec(Http2ConnectionEncoder encoder, Http2ConnectionDecoder decoder, Http2Settings settings,
              boolean decoupleCloseAndGoAway, boolean flushPreface, Supplier<AuditEvent> streamAudit,
              AuditEvent tunnelAudit, int maxHeaderBytes, java.util.Set<Integer> opened) {
            super(encoder, decoder, settings, decoupleCloseAndGoAway, flushPreface);
            this.streamAudit = streamAudit;
            this.tunnelAudit = tunnelAudit;
            this.maxHeaderBytes = maxHeaderBytes;
            this.opened = opened;
        }

        /**
         * A stream the codec resets with PROTOCOL_ERROR before it reached a request phase (a malformed
         * header block, RFC 9113 section 8.1.1: a field name with upper case or a forbidden character, a
         * connection-specific field, a repeated pseudo-header…) gets a record of its own: 400
         * {@code malformed_request} in {@code decision}/{@code reason}, no HTTP answer (the client sees
         * RST_STREAM), the error code in {@code error}. One per stream; nothing of the header block is
         * copied into the record.
         */
        @Override
        public void onError(ChannelHandlerContext ctx, boolean outbound, Throwable cause) {
            Http2Exception embedded = io.netty.handler.codec.http2.Http2CodecUtil.getEmbeddedHttp2Exception(cause);
            // a header list over the limit is answered 431 with its record (handleServerHeaderDecodeSizeError)
            if (!outbound && embedded instanceof Http2Exception.StreamException streamException
                    && !(embedded instanceof Http2Exception.HeaderListSizeException)) {
                recordUnopened(streamException);
            }
            super.onError(ctx, outbound, cause);
        }

        private void recordUnopened(Http2Exception.StreamException streamException) {
            int id = streamException.streamId();
            if (streamException.error() == io.netty.handler.codec.http2.Http2Error.PROTOCOL_ERROR
                    && !opened.contains(id) && refusedUnopened.size() < MAX_CONCURRENT_STREAMS * 10
                    && refusedUnopened.add(id)) {
                AuditEvent audit = streamAudit.get();
                audit.decision(Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE))
                        .error("h2 stream " + id + " reset with PROTOCOL_ERROR: malformed request header block");
                audit.emit();
            }
        }

        @Override
        protected void handleServerHeaderDecodeSizeError(ChannelHandlerContext ctx, Http2Stream stream) {
            Decision denial = Decision.deny(Reason.HEADER_TOO_LARGE, BuiltinRules.MAX_HEADER_BYTES);
            Http2Headers answer = new DefaultHttp2Headers()
                    .status(String.valueOf(denial.reason().httpStatus()))
                    .set(Answers.REASON_HEADER.toLowerCase(java.util.Locale.ROOT), denial.reason().label())
                    .set(ProxyStatus.HEADER.toLowerCase(java.util.Locale.ROOT),
                            ProxyStatus.value(denial.reason(), denial.reasonText()));
            encoder().writeHeaders(ctx, stream.id(), answer, 0, true, ctx.newPromise());
            AuditEvent audit = streamAudit.get();
            audit.decision(denial)
                    .statusCode(denial.reason().httpStatus())
                    .error("h2 header list over " + maxHeaderBytes + " bytes (stream " + stream.id() + ")");
            audit.emit();
        }

        @Override
        protected void onConnectionError(ChannelHandlerContext ctx, boolean outbound, Throwable cause,
                                         Http2Exception http2Ex) {
            if (!reported) {
                reported = true;
                String code = http2Ex == null ? "INTERNAL_ERROR" : http2Ex.error().name();
                String message = cause == null || cause.getMessage() == null ? "" : cause.getMessage();
                if (message.length() > 200) {
                    message = message.substring(0, 200);
                }
                tunnelAudit.error("h2 connection error " + code + " (GOAWAY): " + message);
                log.warn("h2 connection from {} ended with GOAWAY {}: {}", ctx.channel().remoteAddress(), code,
                        message);
            }
            super.onConnectionError(ctx, outbound, cause, http2Ex);
        }
    }

    /**
     * The connection's end of the pipeline: connection errors are already handled by the codec; the
     * idle timeout and the client's FIN close the connection; a graceful shutdown sends GOAWAY and
     * closes once the streams in flight are done.
     */
    private static final class ConnectionEnd extends ChannelInboundHandlerAdapter {
        private final Http2FrameCodec codec;
        private final AuditEvent tunnelAudit;

        ConnectionEnd(Http2FrameCodec codec, AuditEvent tunnelAudit) {
            this.codec = codec;
            this.tunnelAudit = tunnelAudit;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof dev.sluice.proxy.core.Draining) {
                // Graceful shutdown: GOAWAY (NO_ERROR) now, so the client opens no new stream; the
                // connection closes when its last stream ends (the shutdown deadline ends the rest).
                codec.gracefulShutdownTimeoutMillis(-1);
                ctx.channel().close();
                return;
            }
            if (evt instanceof IdleStateEvent) {
                tunnelAudit.error("idle_timeout: no byte either way on the h2 connection");
                ctx.close();
                return;
            }
            if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                // The client sent its FIN: an HTTP/2 client sends nothing more (not even RST_STREAM or
                // WINDOW_UPDATE), so the connection ends here, its streams with it.
                ctx.close();
                return;
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // The frame codec answered it already (GOAWAY or RST_STREAM); an I/O error closes.
            log.debug("h2 connection {}: {}", ctx.channel().remoteAddress(), cause.toString());
            if (!(cause instanceof Http2Exception)) {
                ctx.close();
            }
        }
    }

    /**
     * A stream's request head, made ready for the shared phases and an HTTP/1.1 upstream: the codec's
     * {@code x-http2-*} extension fields are removed; a body with no {@code content-length} gets
     * {@code Transfer-Encoding: chunked} (HTTP/2 frames it by END_STREAM, RFC 9113 section 8.1); a whole
     * request (HEADERS with END_STREAM) is handed on as its head and then its last content.
     */
    static final class StreamRequestHead extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest request) {
                for (HttpConversionUtil.ExtensionHeaderNames name : HttpConversionUtil.ExtensionHeaderNames.values()) {
                    request.headers().remove(name.text());
                }
                // The only TE value HTTP/2 allows; the request phase strips TE, an h2 upstream leg sends it again.
                ctx.channel().attr(dev.sluice.proxy.forward.H2Upstreams.TE_TRAILERS).set(
                        request.headers().containsValue(io.netty.handler.codec.http.HttpHeaderNames.TE,
                                io.netty.handler.codec.http.HttpHeaderValues.TRAILERS, true));
                if (msg instanceof FullHttpRequest full) {
                    HttpRequest head = new DefaultHttpRequest(full.protocolVersion(), full.method(), full.uri(),
                            full.headers());
                    head.setDecoderResult(full.decoderResult());
                    ctx.fireChannelRead(head);
                    ctx.fireChannelRead(new DefaultLastHttpContent(full.content(), full.trailingHeaders()));
                    return;
                }
                if (!HttpUtil.isContentLengthSet(request)) {
                    HttpUtil.setTransferEncodingChunked(request, true);
                }
            }
            ctx.fireChannelRead(msg);
        }
    }

    /**
     * A stream's head that Netty's HTTP/2-to-HTTP/1.1 conversion refuses ({@code HttpConversionUtil}: a
     * {@code host} field that names another authority than {@code :authority}, RFC 9113 section 8.3.1,
     * or another head it cannot convert) is answered on the stream, with its record, as the HTTP/1.1
     * request phase answers the same head: 421 {@code host_mismatch} for the two authorities, else 400
     * {@code malformed_request}; the stream then closes. Without this the conversion's exception reset
     * the stream (CANCEL) and left no record.
     */
    static final class StreamHeadFailure extends ChannelInboundHandlerAdapter {
        private final Supplier<AuditEvent> streamAudit;
        private boolean headSeen;

        StreamHeadFailure(Supplier<AuditEvent> streamAudit) {
            this.streamAudit = streamAudit;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest) {
                headSeen = true;
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (headSeen || !(cause instanceof io.netty.handler.codec.DecoderException)) {
                ctx.fireExceptionCaught(cause);
                return;
            }
            headSeen = true;
            Throwable why = cause.getCause() == null ? cause : cause.getCause();
            boolean authorities = why.getMessage() != null && why.getMessage().contains("':authority' and 'host'");
            Decision denial = authorities ? Decision.deny(Reason.HOST_MISMATCH, BuiltinRules.INTERCEPT_HOST)
                    : Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.HTTP_PARSE);
            dev.sluice.proxy.http.Refusals.refuse(ctx, streamAudit.get(), denial,
                    authorities ? "h2 stream: host names another authority than :authority"
                            : "h2 stream: request head not convertible to HTTP/1.1",
                    null, dev.sluice.proxy.http.Refusals.Ending.CLOSE, java.time.Duration.ZERO);
        }
    }
}
