package dev.sluice.proxy.intercept;

import dev.sluice.rules.credential.CredentialRewriter;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyTooLargeException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Watches a request body that streams on (too large to hold whole) for credential placeholders, in
 * every encoding {@link CredentialRewriter#find} knows, across chunk boundaries: the decoded text is
 * searched with the last {@link #CARRY_CHARS} characters of what came before, and the last
 * {@link #HOLD_BYTES} bytes of the body as it came are held back until the next chunk (or the body's
 * end) shows they complete no placeholder, so the chunk that would complete one never goes upstream.
 * A gzip or deflate body is searched decoded (no size cap: it is not kept); decoding does not change
 * what is forwarded. Not thread-safe: one per body, on its event loop; the caller releases it with
 * {@link #release()}.
 */
final class PlaceholderWatch {

    /**
     * Characters of decoded text kept from one chunk to the next: more than the longest placeholder
     * (109 characters) in its longest encoding (JSON backslash-u escapes, 6 per character).
     */
    static final int CARRY_CHARS = 2048;

    /** Bytes of the body as it came held back until the next chunk. */
    static final int HOLD_BYTES = 2048;

    /** What a watched chunk showed. */
    enum Verdict {
        /** Nothing found: what {@link #forwardable} returns may go upstream. */
        CLEAN,
        /** A placeholder shape ({@link #found()}). */
        PLACEHOLDER,
        /** The coded body does not decode ({@link #problem()}): it cannot be searched. */
        UNREADABLE
    }

    private final BodyDecoding.Decoder decoder;
    private final CompositeByteBuf held;
    private String carry = "";
    private String found;
    private String problem;

    /**
     * @param coding the body's {@code Content-Encoding} as {@link BodyDecoding#parse} read it
     * @param alloc allocates the held-back buffer
     */
    PlaceholderWatch(BodyDecoding.Coding coding, ByteBufAllocator alloc) {
        this.decoder = coding == BodyDecoding.Coding.IDENTITY ? null : BodyDecoding.decoder(coding, Long.MAX_VALUE);
        this.held = alloc.compositeBuffer(64);
    }

    /**
     * Searches {@code chunk} (the caller keeps its reference: this retains what it holds) together with what
     * came before; at {@code last} the body ends.
     */
    Verdict feed(ByteBuf chunk, boolean last) {
        held.addComponent(true, chunk.retainedSlice());
        if (found != null) {
            return Verdict.PLACEHOLDER;
        }
        if (decoder == null) {
            scan(chunk.toString(StandardCharsets.ISO_8859_1));
        } else {
            // decoded pieces (at most 64 KiB each) are searched as they come: a bomb is never held whole
            BodyDecoding.Sink sink = (b, off, len) -> scan(new String(b, off, len, StandardCharsets.ISO_8859_1));
            byte[] bytes = io.netty.buffer.ByteBufUtil.getBytes(chunk);
            try {
                decoder.feed(bytes, 0, bytes.length, sink);
                if (last) {
                    decoder.finish(sink);
                }
            } catch (BodyDecoding.MalformedBodyException | BodyTooLargeException e) {
                problem = e.getMessage();
                return Verdict.UNREADABLE;
            }
        }
        return found != null ? Verdict.PLACEHOLDER : Verdict.CLEAN;
    }

    private void scan(String text) {
        if (found != null) {
            return;
        }
        String window = carry + text;
        found = CredentialRewriter.find(window);
        carry = window.length() <= CARRY_CHARS ? window : window.substring(window.length() - CARRY_CHARS);
    }

    /**
     * Returns the bytes that may go upstream now (owned by the caller): everything but the last
     * {@link #HOLD_BYTES} bytes, or everything at {@code last}.
     */
    ByteBuf forwardable(boolean last) {
        int n = last ? held.readableBytes() : Math.max(0, held.readableBytes() - HOLD_BYTES);
        ByteBuf out = held.readBytes(n); // a copy: discarding components moves the composite's indexes
        held.discardReadComponents();
        return out;
    }

    /** The placeholder shape a {@link Verdict#PLACEHOLDER} found. */
    String found() {
        return found;
    }

    /** Why a {@link Verdict#UNREADABLE} body could not be decoded. */
    String problem() {
        return problem;
    }

    /** Releases what is held back. */
    void release() {
        if (held.refCnt() > 0) {
            held.release();
        }
    }
}
