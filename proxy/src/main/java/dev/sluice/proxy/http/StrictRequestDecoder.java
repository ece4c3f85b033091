package dev.sluice.proxy.http;

import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpRequestDecoder;

/**
 * Netty's request decoder, made strict about framing: where Netty would quietly drop
 * {@code Content-Length} from a message that also has {@code Transfer-Encoding: chunked}, this decoder
 * marks the message as failed with {@link AmbiguousFramingException}, so that Sluice answers 400
 * {@code ambiguous_framing} and forwards nothing (RFC 9112 section 6.1 lets a server reject such a
 * message; a proxy that forwards it invites request smuggling).
 */
public final class StrictRequestDecoder extends HttpRequestDecoder {

    /** @param config Netty decoder limits (initial line, header block, chunk size) */
    public StrictRequestDecoder(HttpDecoderConfig config) {
        super(config);
    }

    @Override
    protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
        message.setDecoderResult(DecoderResult.failure(new AmbiguousFramingException()));
    }

    /** Marks a message carrying both Content-Length and Transfer-Encoding. */
    public static final class AmbiguousFramingException extends Exception {
        private static final long serialVersionUID = 1L;

        AmbiguousFramingException() {
            super("Content-Length with Transfer-Encoding", null, false, false);
        }
    }
}
