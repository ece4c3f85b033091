package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyPlan;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.ByteArrayOutputStream;

/**
 * The body of one request to an inspected host on its way through the {@link RedactionPhase}: scans
 * it (after undoing {@code Content-Encoding}) and decides its framing and when the request head goes
 * to the forwarder. One instance per request body, used on the event loop.
 *
 * <p>Framing (RFC 9112 section 6):
 * <ul>
 *   <li><b>Buffered</b> — a body of at most {@code limits.max_buffered_body} bytes as received is held
 *       whole, and the head waits with it. At its end: unchanged (no finding, or {@code report}, or a
 *       binary body) it goes on <em>byte-identical</em>, with its {@code Content-Encoding} and a
 *       {@code Content-Length} (a chunked body is sent with the length it had, unless it carried
 *       trailer fields); rewritten by {@code redact}, it goes identity-encoded with the
 *       {@code Content-Length} of the rewritten bytes. With {@code Expect: 100-continue} Sluice answers
 *       {@code 100 Continue} itself and sends the head without the expectation (the origin gets the
 *       complete request at once).</li>
 *   <li><b>Streamed</b> — a body declared or found larger goes on as it arrives. Where it may be
 *       rewritten ({@code redact} on a text body, or a compressed body under {@code block}) it is sent
 *       identity-encoded and chunked; otherwise its own bytes go with their own framing, and under
 *       {@code block} only the bytes the redactor released (the last few hundred bytes are held back
 *       until they are scanned). A declared length over the bound starts streaming at once, with any
 *       {@code Expect} left for the origin to answer.</li>
 * </ul>
 * A binary body ({@link BodyPlan#binary()}) is never rewritten: its redactor runs with
 * {@code redaction.binary} (block or report).
 *
 * <p>Refusals (through the forwarder, with the findings in the audit record): 403 with the plan's
 * block reason when {@code block} finds a credential — before the head left when buffered, else the
 * upstream request is aborted before any held-back byte leaves; 413 {@code body_too_large}; 400
 * {@code malformed_request} for a body that does not decode.
 */
final class InspectedBody {

    /** What {@link #onContent} did with the body. */
    enum Progress {
        /** More body is expected. */
        MORE,
        /** The body ended and went on. */
        DONE,
        /** The exchange was refused or aborted; the rest of the body, if any, is to be dropped. */
        FAILED
    }

    private final ForwardRequest request;
    private final BodyPlan plan;
    private final BodyDecoding.Coding coding;
    private final DetectorSet detectors;
    private final long maxInspectedBytes;
    private final Reason blockReason;
    private final BodyDecoding.Decoder decoder;
    private final StreamingRedactor redactor;
    private final int boundBytes;
    /** Streamed, the body is sent as the redactor's identity-encoded output, chunked (else as received). */
    private final boolean rechunk;

    /** Buffering: the body as received (null once streaming or ended). */
    private CompositeByteBuf original;
    /** Buffering: the redactor's output, kept where it may be what is sent (null otherwise). */
    private ByteArrayOutputStream rewritten;
    /** Streaming as received under block: received bytes the redactor has not released yet. */
    private CompositeByteBuf held;
    private long releasedBytes;
    private boolean headSent;

    private InspectedBody(ForwardRequest request, BodyPlan plan, Reason blockReason, BodyDecoding.Coding coding,
                          DetectorSet detectors, long maxInspectedBytes, int boundBytes,
                          dev.sluice.rules.redact.KeywordTap tap) {
        this.request = request;
        this.plan = plan;
        this.coding = coding;
        this.detectors = detectors;
        this.maxInspectedBytes = maxInspectedBytes;
        this.blockReason = plan.binary() ? Reason.CREDENTIAL_DETECTED : blockReason;
        this.decoder = BodyDecoding.decoder(coding, maxInspectedBytes);
        this.redactor = detectors.newRedactor(plan.format(), plan.action(), maxInspectedBytes, tap);
        this.boundBytes = boundBytes;
        this.rechunk = plan.mayRewrite()
                || (plan.action() == RedactionAction.BLOCK && coding != BodyDecoding.Coding.IDENTITY);
    }

    /**
     * Starts the body of {@code request} (its head is held until the framing is known).
     *
     * @param request the request, its response scan attached; its headers may be changed here
     * @param plan how the body is scanned
     * @param blockReason the 403 reason of a text body's block (SigV4: {@code signed_body})
     * @param coding the parsed {@code Content-Encoding}
     * @param maxInspectedBytes {@code limits.max_inspected_body}: most decoded bytes scanned
     * @param boundBytes {@code limits.max_buffered_body}: most received bytes held whole
     * @param tap what the redactor reports its tap keywords to (the red flags in its pass), or null
     */
    static InspectedBody start(ChannelHandlerContext ctx, ForwardRequest request, BodyPlan plan, Reason blockReason,
                               BodyDecoding.Coding coding, DetectorSet detectors, long maxInspectedBytes,
                               int boundBytes, dev.sluice.rules.redact.KeywordTap tap) {
        InspectedBody body = new InspectedBody(request, plan, blockReason, coding, detectors, maxInspectedBytes,
                boundBytes, tap);
        long declared = HttpUtil.getContentLength(request.request(), -1L);
        if (declared > boundBytes) {
            body.sendStreamedHead(ctx);
        } else {
            body.original = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
            body.rewritten = body.rechunk ? new ByteArrayOutputStream() : null;
            if (HttpUtil.is100ContinueExpected(request.request())) {
                // RFC 9110 section 10.1.1: the body is needed before the head can go; ask for it.
                HttpUtil.set100ContinueExpected(request.request(), false);
                ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE,
                        Unpooled.EMPTY_BUFFER)).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            }
        }
        return body;
    }

    /** Scans one piece of the body and sends on what may go now. Releases {@code content}. */
    Progress onContent(ChannelHandlerContext ctx, HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        try {
            ByteArrayOutputStream out = rechunk ? new ByteArrayOutputStream() : null;
            BodyDecoding.Sink sink = (b, off, len) -> {
                byte[] released = redactor.feed(b, off, len);
                if (out != null) {
                    out.writeBytes(released);
                }
            };
            ByteBuf in = content.content();
            byte[] bytes = ByteBufUtil.getBytes(in);
            decoder.feed(bytes, 0, bytes.length, sink);
            if (last) {
                decoder.finish(sink);
                byte[] tail = redactor.finish();
                if (out != null) {
                    out.writeBytes(tail);
                }
            }
            if (redactor.blocked()) {
                return fail(ctx, content, last, Decision.deny(blockReason, BuiltinRules.REDACTION), "credential in the body");
            }
            if (original != null) {
                return buffer(ctx, content, last, out);
            }
            stream(ctx, content, last, out);
            content.release();
            if (last) {
                record();
                return Progress.DONE;
            }
            return Progress.MORE;
        } catch (BodyTooLargeException e) {
            return fail(ctx, content, last, Decision.deny(Reason.BODY_TOO_LARGE, BuiltinRules.MAX_INSPECTED_BODY),
                    "body over " + e.limitBytes() + " bytes");
        } catch (BodyDecoding.MalformedBodyException e) {
            return fail(ctx, content, last, Decision.deny(Reason.UNSUPPORTED_ENCODING, BuiltinRules.REDACTION_ENCODING), e.getMessage());
        }
    }

    /**
     * The downstream connection closed before the body ended: when the head never went on (the
     * forwarder does not know the exchange), writes its audit record. Releases what is held.
     */
    void abandon() {
        abandon("downstream closed before the request body ended");
    }

    /**
     * As {@link #abandon()}, with {@code error} on the record (e.g. {@code client_closed_mid_body} when the
     * client half-closed before the body ended).
     */
    void abandon(String error) {
        if (!headSent) {
            headSent = true;
            record();
            request.audit().error(error).emit();
        }
        release();
    }

    /** Releases what is held (the exchange ended some other way). Idempotent. */
    void release() {
        if (original != null) {
            original.release();
            original = null;
        }
        if (held != null) {
            held.release();
            held = null;
        }
        rewritten = null;
    }

    private Progress buffer(ChannelHandlerContext ctx, HttpContent content, boolean last, ByteArrayOutputStream out) {
        ByteBuf in = content.content();
        if (in.isReadable()) {
            original.addComponent(true, in.retain());
        }
        if (rewritten != null) {
            rewritten.writeBytes(out.toByteArray());
        }
        if (original.readableBytes() > boundBytes || (rewritten != null && rewritten.size() > boundBytes)) {
            switchToStreaming(ctx, content, last);
            content.release();
            if (last) {
                record();
                return Progress.DONE;
            }
            return Progress.MORE;
        }
        if (!last) {
            content.release();
            return Progress.MORE;
        }
        record();
        HttpHeaders headers = request.request().headers();
        HttpHeaders trailers = ((LastHttpContent) content).trailingHeaders();
        ByteBuf send;
        if (plan.mayRewrite() && redactor.hasFindings()) {
            send = Unpooled.wrappedBuffer(rewritten.toByteArray());
            headers.remove(HttpHeaderNames.CONTENT_ENCODING);
        } else {
            send = original;
        }
        // Trailer fields exist only in chunked framing: a body that carried some stays chunked.
        boolean keepChunked = !trailers.isEmpty() && HttpUtil.isTransferEncodingChunked(request.request());
        LastHttpContent lastContent = new DefaultLastHttpContent(send);
        if (keepChunked) {
            lastContent.trailingHeaders().set(trailers);
        } else {
            headers.remove(HttpHeaderNames.TRANSFER_ENCODING);
            headers.set(HttpHeaderNames.CONTENT_LENGTH, send.readableBytes());
        }
        if (send != original) {
            original.release();
        }
        original = null;
        rewritten = null;
        content.release();
        headSent = true;
        ctx.fireChannelRead(request);
        ctx.fireChannelRead(lastContent);
        return Progress.DONE;
    }

    /**
     * Ends the exchange at its last piece with {@code decision} (a credential in a trailer field under
     * {@code block}): refused when the head has not gone on, else aborted upstream. Releases
     * {@code content}.
     */
    Progress refuse(ChannelHandlerContext ctx, LastHttpContent content, Decision decision, String detail) {
        return fail(ctx, content, true, decision, detail);
    }

    /** The body outgrew the bound: send the head and what was held, and stream the rest. */
    private void switchToStreaming(ChannelHandlerContext ctx, HttpContent content, boolean last) {
        HttpHeaders trailers = last ? ((LastHttpContent) content).trailingHeaders() : null;
        CompositeByteBuf received = original;
        ByteArrayOutputStream output = rewritten;
        original = null;
        rewritten = null;
        sendStreamedHead(ctx);
        if (rechunk) {
            received.release();
            send(ctx, Unpooled.wrappedBuffer(output.toByteArray()), last, trailers);
        } else if (plan.action() == RedactionAction.BLOCK) {
            held = received;
            releaseHeld(ctx, last, trailers);
        } else {
            send(ctx, received, last, trailers);
        }
    }

    private void stream(ChannelHandlerContext ctx, HttpContent content, boolean last, ByteArrayOutputStream out) {
        HttpHeaders trailers = last ? ((LastHttpContent) content).trailingHeaders() : null;
        if (rechunk) {
            send(ctx, Unpooled.wrappedBuffer(out.toByteArray()), last, trailers);
        } else if (plan.action() == RedactionAction.BLOCK) {
            if (held == null) {
                held = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
            }
            if (content.content().isReadable()) {
                held.addComponent(true, content.content().retain());
            }
            releaseHeld(ctx, last, trailers);
        } else {
            send(ctx, content.content().retain(), last, trailers);
        }
    }

    /** Sends the received bytes the redactor has released (all of them at the end). */
    private void releaseHeld(ChannelHandlerContext ctx, boolean last, HttpHeaders trailers) {
        long releasable = last ? held.readableBytes() : redactor.bytesOut() - releasedBytes;
        int n = (int) Math.min(releasable, held.readableBytes());
        // A copy: a slice of the composite would change under it when its read components are discarded.
        ByteBuf now = ctx.alloc().buffer(n);
        held.readBytes(now, n);
        releasedBytes += n;
        held.discardReadComponents();
        if (last) {
            held.release();
            held = null;
        }
        send(ctx, now, last, trailers);
    }

    private void send(ChannelHandlerContext ctx, ByteBuf buf, boolean last, HttpHeaders trailers) {
        if (last) {
            LastHttpContent lastContent = new DefaultLastHttpContent(buf);
            if (trailers != null) {
                lastContent.trailingHeaders().set(trailers);
            }
            ctx.fireChannelRead(lastContent);
        } else if (buf.isReadable()) {
            ctx.fireChannelRead(new DefaultHttpContent(buf));
        } else {
            buf.release();
        }
    }

    /** Sends the head of a streamed body: identity-encoded and chunked when re-chunked, else as it came. */
    private void sendStreamedHead(ChannelHandlerContext ctx) {
        if (rechunk) {
            // The rewritten body is identity-encoded and its length is known only at the end: re-chunk it.
            HttpHeaders headers = request.request().headers();
            headers.remove(HttpHeaderNames.CONTENT_ENCODING);
            headers.remove(HttpHeaderNames.CONTENT_LENGTH);
            HttpUtil.setTransferEncodingChunked(request.request(), true);
        }
        headSent = true;
        ctx.fireChannelRead(request);
    }

    /**
     * Ends the exchange with a refusal: before the head went, the forwarder refuses the request (and
     * is told when its body has ended); after, it aborts the upstream request.
     */
    private Progress fail(ChannelHandlerContext ctx, HttpContent content, boolean last, Decision decision,
                          String detail) {
        record();
        byte[] redacted = !headSent && last && redactor.blocked() ? redactedForCapture(content) : null;
        content.release();
        release();
        if (headSent) {
            ctx.fireChannelRead(new ExchangeControl.Abort(decision, detail));
        } else {
            headSent = true;
            if (redacted != null) {
                // what redact would have sent, identity-coded: for the capture phase, dropped by the forwarder
                request.request().headers().remove(HttpHeaderNames.CONTENT_ENCODING);
            }
            ctx.fireChannelRead(new ExchangeControl.Refuse(request, decision, detail, redacted != null));
            if (redacted != null) {
                ctx.fireChannelRead(new DefaultLastHttpContent(Unpooled.wrappedBuffer(redacted)));
            } else if (last) {
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
        }
        return Progress.FAILED;
    }

    /**
     * The body a {@code redact} action would have sent, for a capture of this block refusal: only when
     * the request is to be captured (policy {@code capture}: its host, its sampled event id), the whole
     * body was held ({@code content} is its last piece) and it is text (a binary body is never
     * rewritten). Decoded again and run through a redacting redactor of the same detectors; null when
     * any of that does not hold or fails (the capture then keeps no body).
     */
    private byte[] redactedForCapture(HttpContent content) {
        dev.sluice.rules.policy.CaptureSettings capture = request.policy().capture();
        if (original == null || plan.binary() || capture == null
                || !capture.covers(request.target().target().host()) || !capture.sampled(request.audit().eventId())) {
            return null;
        }
        try {
            StreamingRedactor copy = detectors.newRedactor(plan.format(), RedactionAction.REDACT, maxInspectedBytes);
            BodyDecoding.Decoder again = BodyDecoding.decoder(coding, maxInspectedBytes);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            BodyDecoding.Sink sink = (b, off, len) -> out.writeBytes(copy.feed(b, off, len));
            byte[] held = ByteBufUtil.getBytes(original);
            again.feed(held, 0, held.length, sink);
            byte[] tail = ByteBufUtil.getBytes(content.content());
            again.feed(tail, 0, tail.length, sink);
            again.finish(sink);
            out.writeBytes(copy.finish());
            return out.toByteArray();
        } catch (BodyTooLargeException | BodyDecoding.MalformedBodyException | RuntimeException e) {
            return null;
        }
    }

    /** Copies the redactor's findings into the exchange's record (detector id → count). */
    private void record() {
        if (redactor.hasFindings()) {
            AuditEvent audit = request.audit();
            redactor.findings().forEach(audit::addRedactions);
        }
    }
}
