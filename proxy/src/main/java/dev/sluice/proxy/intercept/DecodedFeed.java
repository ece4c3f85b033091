package dev.sluice.proxy.intercept;

import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyTooLargeException;
import io.netty.buffer.ByteBuf;

/**
 * Feeds the chunks of one body, undone of its {@code Content-Encoding} by a {@link BodyDecoding.Decoder},
 * to a {@link BodyDecoding.Sink}: a heap buffer is read in place, a direct one through a reused scratch
 * array. The first decoding failure (over the decoder's size cap, or a malformed coding) ends the reading;
 * what was fed before stays fed. The caller keeps ownership of every buffer. Not thread-safe: one per body,
 * on its event loop.
 */
final class DecodedFeed {

    private final BodyDecoding.Sink sink;
    private BodyDecoding.Decoder decoder;
    private byte[] scratch;

    DecodedFeed(BodyDecoding.Decoder decoder, BodyDecoding.Sink sink) {
        this.decoder = decoder;
        this.sink = sink;
    }

    /** Feeds the readable bytes of {@code content} (its reader index is not moved). */
    void feed(ByteBuf content) {
        if (decoder == null || !content.isReadable()) {
            return;
        }
        int n = content.readableBytes();
        byte[] in;
        int off;
        if (content.hasArray()) {
            in = content.array();
            off = content.arrayOffset() + content.readerIndex();
        } else {
            if (scratch == null || scratch.length < n) {
                scratch = new byte[Math.max(n, 8192)];
            }
            content.getBytes(content.readerIndex(), scratch, 0, n);
            in = scratch;
            off = 0;
        }
        try {
            decoder.feed(in, off, n, sink);
        } catch (BodyTooLargeException | BodyDecoding.MalformedBodyException e) {
            decoder = null; // read no further; what was read stays
        }
    }

    /** Feeds what the decoder still holds at the body's end; nothing more is read after it. */
    void finish() {
        if (decoder != null) {
            try {
                decoder.finish(sink);
            } catch (BodyTooLargeException | BodyDecoding.MalformedBodyException e) {
                // what was read stays
            }
        }
        decoder = null;
    }
}
