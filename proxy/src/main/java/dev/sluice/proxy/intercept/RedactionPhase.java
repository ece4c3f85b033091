package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.explicit.ForwardRequest;
import dev.sluice.proxy.forward.ExchangeControl;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.RedactionSettings;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.HeaderScanner;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.SigV4;
import dev.sluice.rules.redact.StreamingRedactor;
import dev.sluice.rules.redact.UnsupportedContentEncodingException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The redaction phase of an intercepted tunnel to a host with {@code redact: true}, between the request
 * phase and the forwarder: scans every request's headers (except the provider's own auth headers) and
 * streams its body through the {@link StreamingRedactor} of the policy's {@code redaction} settings —
 * after undoing {@code gzip} / {@code deflate} (capped at {@code limits.max_inspected_body}) — and hands
 * the forwarder the result, identity-encoded and re-chunked. A SigV4-signed request cannot be changed,
 * so a match there blocks unless the action is {@code report}. Responses of JSON and
 * {@code text/event-stream} types are scanned in report mode as they stream; what is found there is
 * counted under {@code response.<detector-id>}.
 *
 * <p>Answers (through the forwarder): 403 {@code credential_detected} / {@code signed_body} (block),
 * 413 {@code body_too_large}, 415 {@code unsupported_encoding}, 400 {@code malformed_request} for a body
 * that does not decode. A body is never passed on unscanned. Audit records list detector ids and counts,
 * never a value.
 */
final class RedactionPhase extends ChannelInboundHandlerAdapter {

    private final boolean enabled;
    private ForwardRequest current;
    private StreamingRedactor redactor;
    private BodyDecoding.Decoder decoder;
    private Reason blockReason;
    private boolean dropping;

    RedactionPhase(boolean enabled) {
        this.enabled = enabled;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            onRequest(ctx, request);
        } else if (msg instanceof ExchangeControl.ClientClosedMidBody) {
            // The body will never end: forget its scan state, and let the forwarder end the exchange.
            current = null;
            redactor = null;
            decoder = null;
            dropping = false;
            ctx.fireChannelRead(msg);
        } else if (msg instanceof HttpContent content) {
            onContent(ctx, content);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest request) {
        current = request;
        redactor = null;
        decoder = null;
        dropping = false;
        RedactionSettings settings = request.policy().redaction();
        if (!enabled || settings == null) {
            ctx.fireChannelRead(request);
            return;
        }
        HttpHeaders headers = request.request().headers();
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        String uri = request.request().uri();
        int q = uri.indexOf('?');
        boolean signed = SigV4.isSigned(entries, q < 0 ? null : uri.substring(q + 1));
        SigV4.Plan plan = SigV4.plan(settings.action(), signed);
        blockReason = plan.blockReason();
        AuditEvent audit = request.audit();

        HeaderScanner.Result scanned = new HeaderScanner(settings.detectors(), HeaderScanner.PROVIDER_AUTH_HEADERS)
                .scan(entries);
        if (scanned.hasFindings()) {
            scanned.findings().forEach(audit::addRedactions);
            if (plan.action() == RedactionAction.BLOCK) {
                refuse(ctx, request, Decision.deny(plan.blockReason(), "redaction"), "credential in a header");
                return;
            }
            if (plan.action() == RedactionAction.REDACT) {
                headers.clear();
                scanned.headers().forEach(e -> headers.add(e.getKey(), e.getValue()));
            }
        }

        boolean hasBody = HttpUtil.isTransferEncodingChunked(request.request())
                || HttpUtil.getContentLength(request.request(), 0L) > 0;
        if (hasBody) {
            BodyDecoding.Coding coding;
            try {
                coding = BodyDecoding.parse(headers.get(HttpHeaderNames.CONTENT_ENCODING));
            } catch (UnsupportedContentEncodingException e) {
                refuse(ctx, request, Decision.deny(e.reason(), "redaction.encoding"), e.getMessage());
                return;
            }
            long cap = request.policy().limits().maxInspectedBodyBytes();
            long declared = HttpUtil.getContentLength(request.request(), -1L);
            if (coding == BodyDecoding.Coding.IDENTITY && declared > cap) {
                refuse(ctx, request, Decision.deny(Reason.BODY_TOO_LARGE, "limits.max_inspected_body"),
                        "body over " + cap + " bytes");
                return;
            }
            decoder = BodyDecoding.decoder(coding, cap);
            redactor = settings.detectors().newRedactor(
                    BodyFormat.forContentType(headers.get(HttpHeaderNames.CONTENT_TYPE)), plan.action(), cap);
            // The rewritten body is identity-encoded and its length is known only at the end: re-chunk it.
            headers.remove(HttpHeaderNames.CONTENT_ENCODING);
            headers.remove(HttpHeaderNames.CONTENT_LENGTH);
            HttpUtil.setTransferEncodingChunked(request.request(), true);
        }
        ctx.fireChannelRead(request.withResponseScan(new ResponseReport(settings)));
    }

    private void onContent(ChannelHandlerContext ctx, HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (dropping) {
            content.release();
            if (last) {
                dropping = false;
                // Tells the forwarder the refused request has ended (it then closes the connection).
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
            return;
        }
        if (redactor == null) {
            ctx.fireChannelRead(content);
            return;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            ByteBuf in = content.content();
            byte[] bytes = ByteBufUtil.getBytes(in);
            decoder.feed(bytes, 0, bytes.length, (b, off, len) -> out.writeBytes(redactor.feed(b, off, len)));
            if (last) {
                decoder.finish((b, off, len) -> out.writeBytes(redactor.feed(b, off, len)));
                out.writeBytes(redactor.finish());
            }
        } catch (BodyTooLargeException e) {
            abort(ctx, content, last, Decision.deny(Reason.BODY_TOO_LARGE, "limits.max_inspected_body"),
                    "body over " + e.limitBytes() + " bytes");
            return;
        } catch (BodyDecoding.MalformedBodyException e) {
            abort(ctx, content, last, Decision.deny(e.reason(), "redaction.encoding"), e.getMessage());
            return;
        }
        if (redactor.blocked()) {
            abort(ctx, content, last, Decision.deny(blockReason, "redaction"), "credential in the body");
            return;
        }
        content.release();
        ByteBuf buf = Unpooled.wrappedBuffer(out.toByteArray());
        if (last) {
            record();
            LastHttpContent lastContent = new DefaultLastHttpContent(buf);
            if (content instanceof LastHttpContent original) {
                lastContent.trailingHeaders().set(original.trailingHeaders());
            }
            redactor = null;
            decoder = null;
            ctx.fireChannelRead(lastContent);
        } else if (buf.isReadable()) {
            ctx.fireChannelRead(new DefaultHttpContent(buf));
        } else {
            buf.release();
        }
    }

    /** Copies the redactor's findings so far into the exchange's record (detector id → count). */
    private void record() {
        if (redactor != null && current != null && redactor.hasFindings()) {
            AuditEvent audit = current.audit();
            redactor.findings().forEach(audit::addRedactions);
        }
    }

    private void refuse(ChannelHandlerContext ctx, ForwardRequest request, Decision decision, String detail) {
        ctx.fireChannelRead(new ExchangeControl.Refuse(request, decision, detail));
    }

    private void abort(ChannelHandlerContext ctx, HttpContent content, boolean last, Decision decision, String detail) {
        record();
        ReferenceCountUtil.release(content);
        redactor = null;
        decoder = null;
        dropping = !last;
        ctx.fireChannelRead(new ExchangeControl.Abort(decision, detail));
    }

    /** Report-mode scan of JSON and event-stream responses: counts credentials seen coming back. */
    private static final class ResponseReport implements ForwardRequest.ResponseScan {
        private final RedactionSettings settings;
        private StreamingRedactor scan;

        ResponseReport(RedactionSettings settings) {
            this.settings = settings;
        }

        @Override
        public void onHead(HttpResponse head) {
            String type = head.headers().get(HttpHeaderNames.CONTENT_TYPE);
            boolean encoded = head.headers().contains(HttpHeaderNames.CONTENT_ENCODING)
                    && !"identity".equalsIgnoreCase(head.headers().get(HttpHeaderNames.CONTENT_ENCODING));
            scan = !encoded && BodyFormat.forContentType(type) == BodyFormat.JSON
                    ? settings.detectors().newRedactor(BodyFormat.JSON, RedactionAction.REPORT, Long.MAX_VALUE)
                    : null;
        }

        @Override
        public void onContent(ByteBuf content, boolean last, AuditEvent audit) {
            if (scan == null) {
                return;
            }
            try {
                if (content.isReadable()) {
                    scan.feed(content.nioBuffer());
                }
            } catch (BodyTooLargeException e) {
                scan = null;
                return;
            }
            if (last) {
                scan.finish();
                scan.findings().forEach((id, n) -> audit.addRedactions("response." + id, n));
                scan = null;
            }
        }
    }
}
