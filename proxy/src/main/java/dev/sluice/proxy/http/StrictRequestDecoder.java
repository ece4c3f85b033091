package dev.sluice.proxy.http;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.List;

/**
 * Netty's request decoder, made strict about framing (RFC 9112 sections 6 and 7.1). Netty parses;
 * this decoder also refuses what Netty would let through or repair quietly, by marking the message
 * (or its body) as failed with {@link AmbiguousFramingException}, so that Sluice answers 400
 * {@code ambiguous_framing}, forwards nothing more and closes:
 * <ul>
 *   <li>{@code Content-Length} together with {@code Transfer-Encoding: chunked} (Netty would drop the
 *       length; RFC 9112 section 6.1 lets a server reject such a message);</li>
 *   <li>more than one {@code Content-Length} field or a list value (even with equal values), and more
 *       than one {@code Transfer-Encoding} field;</li>
 *   <li>any chunked body whose framing {@link ChunkedFraming} does not accept exactly: the chunk-size
 *       line, the CRLF after each chunk's data, and the trailer section.</li>
 * </ul>
 * Netty's own refusals of a chunk (an invalid size or extension, a bad chunk terminator) arrive the
 * same way, as a {@link LastHttpContent} whose decoder result is a failure. After any failure the
 * decoder reads and drops everything else the connection sends: no later byte is taken for a request.
 */
public final class StrictRequestDecoder extends HttpRequestDecoder {

    private final ChunkedFraming framing;
    private boolean broken;

    /** @param config Netty decoder limits (initial line, header block, chunk size) */
    public StrictRequestDecoder(HttpDecoderConfig config) {
        super(config);
        this.framing = new ChunkedFraming(config.getMaxHeaderSize());
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf buffer, List<Object> out) throws Exception {
        if (broken) {
            buffer.skipBytes(buffer.readableBytes());
            return;
        }
        int from = buffer.readerIndex();
        int emitted = out.size();
        boolean reading = framing.active();
        super.decode(ctx, buffer, out);
        if (reading && !framing.feed(buffer, from, buffer.readerIndex()) && !failedIn(out, emitted)) {
            failBody(buffer, out, emitted, framing.error());
            return;
        }
        for (int i = emitted; i < out.size(); i++) {
            Object msg = out.get(i);
            if (msg instanceof HttpRequest request) {
                checkHead(request);
                if (request.decoderResult().isFailure()) {
                    broken = true;
                } else if (!(msg instanceof LastHttpContent) && HttpUtil.isTransferEncodingChunked(request)) {
                    framing.start();
                }
            } else if (msg instanceof HttpContent content && content.decoderResult().isFailure()) {
                broken = true;
            }
        }
        if (broken) {
            buffer.skipBytes(buffer.readableBytes());
        }
    }

    /** Marks a head whose framing fields are repeated (Netty accepts a repeated Transfer-Encoding). */
    private static void checkHead(HttpRequest request) {
        List<String> lengths = request.headers().getAll(HttpHeaderNames.CONTENT_LENGTH);
        if (lengths.size() > 1 || (lengths.size() == 1 && lengths.get(0).indexOf(',') >= 0)) {
            request.setDecoderResult(DecoderResult.failure(new AmbiguousFramingException("Content-Length repeated")));
        } else if (request.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING).size() > 1) {
            request.setDecoderResult(DecoderResult.failure(
                    new AmbiguousFramingException("Transfer-Encoding repeated")));
        }
    }

    /** Answers whether Netty itself already ended the body with a failure in this call. */
    private static boolean failedIn(List<Object> out, int emitted) {
        for (int i = emitted; i < out.size(); i++) {
            if (out.get(i) instanceof HttpContent c && !(out.get(i) instanceof HttpRequest)
                    && c.decoderResult().isFailure()) {
                return true;
            }
        }
        return false;
    }

    /** Drops the body contents decoded in this call and ends the body with a failed last content. */
    private void failBody(ByteBuf buffer, List<Object> out, int emitted, String detail) {
        for (int i = out.size() - 1; i >= emitted; i--) {
            if (out.get(i) instanceof HttpContent && !(out.get(i) instanceof HttpRequest)) {
                ReferenceCountUtil.release(out.remove(i));
            }
        }
        LastHttpContent failed = new DefaultLastHttpContent(Unpooled.EMPTY_BUFFER);
        failed.setDecoderResult(DecoderResult.failure(new AmbiguousFramingException(detail)));
        out.add(failed);
        broken = true;
        buffer.skipBytes(buffer.readableBytes());
    }

    /**
     * Returns a short, input-free detail for the audit record of a failed chunked body: this decoder's
     * own finding, or the kind of Netty's refusal (an invalid chunk-size, extension or terminator).
     */
    public static String framingDetail(Throwable cause) {
        if (cause instanceof AmbiguousFramingException) {
            return "malformed chunked request body: " + cause.getMessage();
        }
        return "malformed chunked request body";
    }

    @Override
    protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
        message.setDecoderResult(DecoderResult.failure(
                new AmbiguousFramingException("Content-Length with Transfer-Encoding")));
    }

    /**
     * Marks a message or body whose framing is ambiguous or malformed; the message is a short detail
     * that is safe for the audit record (it never quotes the input).
     */
    public static final class AmbiguousFramingException extends Exception {
        private static final long serialVersionUID = 1L;

        AmbiguousFramingException(String detail) {
            super(detail, null, false, false);
        }
    }
}
