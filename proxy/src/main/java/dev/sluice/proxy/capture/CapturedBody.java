package dev.sluice.proxy.capture;

import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.UnsupportedContentEncodingException;
import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import org.jspecify.annotations.Nullable;

/**
 * One body as a capture keeps it: its {@code Content-Encoding} ({@code gzip}, {@code deflate}) undone,
 * at most {@code maxBytes} decoded bytes, {@link #truncated()} when there was more. A coding Sluice
 * cannot undo (or a malformed one) keeps the bytes as they came, and says so in {@link #note()}.
 * Not thread-safe: fed on one event loop, then read by the writer after {@link #finish()}.
 */
public final class CapturedBody {

    private final long maxBytes;
    private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
    private BodyDecoding.@Nullable Decoder decoder;
    private byte @Nullable [] scratch;
    private boolean truncated;
    private boolean stopped;
    private String note;

    /**
     * @param contentEncoding the body's {@code Content-Encoding} field value, or null
     * @param maxBytes the most bytes kept, {@code > 0}
     */
    public CapturedBody(String contentEncoding, long maxBytes) {
        this.maxBytes = maxBytes;
        BodyDecoding.Coding coding;
        try {
            coding = BodyDecoding.parse(contentEncoding);
        } catch (UnsupportedContentEncodingException e) {
            coding = BodyDecoding.Coding.IDENTITY;
            note = "content-encoding " + contentEncoding + " kept as sent";
        }
        this.decoder = BodyDecoding.decoder(coding, Long.MAX_VALUE);
    }

    /** Takes the readable bytes of {@code content} (its reader index is not moved; the caller keeps it). */
    public void feed(ByteBuf content) {
        if (stopped || !content.isReadable()) {
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
        feed(in, off, n);
    }

    /** Takes {@code in[off, off + len)}. */
    public void feed(byte[] in, int off, int len) {
        if (stopped) {
            return;
        }
        try {
            decoder.feed(in, off, len, this::keep);
        } catch (BodyTooLargeException e) {
            stop();
        } catch (BodyDecoding.MalformedBodyException e) {
            note = "the body's content-encoding is malformed: " + e.getMessage();
            stop();
        }
    }

    /** Ends the body (a compressed body's last bytes are decoded). */
    public void finish() {
        if (stopped) {
            return;
        }
        try {
            decoder.finish(this::keep);
        } catch (BodyTooLargeException e) {
            truncated = true;
        } catch (BodyDecoding.MalformedBodyException e) {
            note = "the body's content-encoding is malformed: " + e.getMessage();
        }
        stop();
    }

    /**
     * Keeps nothing more of this body and says why in {@link #note()} (a refused request whose body
     * Sluice never read as it would have been sent: it is not kept raw).
     */
    public void withhold(String why) {
        note = why;
        stop();
    }

    private void stop() {
        stopped = true;
        scratch = null;
    }

    private void keep(byte[] b, int off, int len) throws BodyTooLargeException {
        long room = maxBytes - kept.size();
        if (len > room) {
            kept.write(b, off, (int) room);
            truncated = true;
            throw new BodyTooLargeException(maxBytes);
        }
        kept.write(b, off, len);
    }

    /** Returns the decoded bytes kept (a copy). */
    public byte[] bytes() {
        return kept.toByteArray();
    }

    /** Returns how many bytes are kept. */
    public int size() {
        return kept.size();
    }

    /** Answers whether the body went on past {@code maxBytes}. */
    public boolean truncated() {
        return truncated;
    }

    /** Returns why the body is kept other than decoded, or null. */
    public String note() {
        return note;
    }
}
