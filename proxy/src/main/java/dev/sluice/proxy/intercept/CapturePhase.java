package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.capture.Capture;
import dev.sluice.proxy.capture.CaptureStore;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.CaptureSettings;
import dev.sluice.rules.policy.Extension;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;

/**
 * The capture phase of an intercepted tunnel (policy {@code capture}), after the redaction and red-flag
 * phases and before the credential phase: the request body it copies is the one that goes upstream
 * after redaction, with placeholders where credentials will be injected, never a real injected value.
 *
 * <p>For each {@link ForwardRequest} to a host under {@code capture.hosts} whose audit event id is
 * sampled ({@link CaptureSettings#sampled}), it marks the record {@code capture: true}, copies the
 * request body as it passes (at most {@code max_body_bytes}), and adds a response scan that copies the
 * response (content-decoded, at most {@code max_body_bytes}). The capture goes to the {@link CaptureStore}
 * when the response ends; an exchange that ends otherwise (the upstream failed, the client left, a
 * refusal further on, an upgrade) is handed over with what it has when the next request comes or the
 * channel ends. Nothing is held or changed; every message is passed on as it came.
 *
 * <p>Refusals: an {@link ExchangeControl.Refuse} from a phase before this one (red flags, redaction,
 * token budget) on a covered, sampled host is captured too, with the refusal's status, reason and rule
 * in place of a response. Its body is copied only when the refusal says it is the body as it would have
 * been sent ({@link ExchangeControl.Refuse#bodyAsSent()}: the red-flag phase's), otherwise it is not kept
 * (it follows raw, not redacted) and a note says so. An {@link ExchangeControl.Abort} before the response
 * began records the refusal on the capture in progress (its body is what passed before the abort). A
 * refusal by the credential phase (after this one) is read from the audit record when the capture is
 * handed over.
 */
final class CapturePhase extends ChannelInboundHandlerAdapter {

    /** Pipeline name. */
    static final String NAME = HttpPipeline.CAPTURE;

    private final ProxyContext context;
    /** The capture whose request body is passing now, or null. */
    private Capture requestBody;
    /** The last capture started here and its settings, submitted at the latest when the next one starts. */
    private Capture pending;
    private CaptureSettings pendingSettings;
    private AuditEvent pendingAudit;

    CapturePhase(ProxyContext context) {
        this.context = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            ctx.fireChannelRead(onRequest(request));
            return;
        }
        if (msg instanceof ExchangeControl.Refuse refuse) {
            onRefuse(ctx, refuse);
            return;
        }
        if (msg instanceof ExchangeControl.Abort abort && pending != null && pending.response() == null) {
            // the forwarder answers the refusal (no response began), or closes a response that did
            refused(pending, abort.decision(), abort.detail());
        }
        if (msg instanceof HttpContent content && requestBody != null) {
            requestBody.request().feed(content.content());
            if (content instanceof LastHttpContent) {
                requestBody.request().finish();
                Capture done = requestBody;
                requestBody = null;
                if (done.isRefused() && done == pending) {
                    // no response will come: hand it over now that its body is complete
                    ctx.fireChannelRead(msg);
                    flush();
                    return;
                }
            }
        }
        ctx.fireChannelRead(msg);
    }

    /** A refusal from a phase before this one: captured like a request, with the refusal as its answer. */
    private void onRefuse(ChannelHandlerContext ctx, ExchangeControl.Refuse refuse) {
        flush();
        requestBody = null;
        ForwardRequest request = refuse.request();
        Capture capture = start(request);
        if (capture == null) {
            ctx.fireChannelRead(refuse);
            return;
        }
        refused(capture, refuse.decision(), refuse.detail());
        boolean hasBody = HttpUtil.isTransferEncodingChunked(request.request())
                || HttpUtil.getContentLength(request.request(), 0L) > 0;
        boolean follows = false;
        if (!refuse.bodyAsSent()) {
            if (hasBody) {
                capture.request().withhold("not kept: Sluice refused the request before its body was read as it "
                        + "would have been sent (a body is never kept unredacted)");
            } else {
                capture.request().finish();
            }
        } else if (request.request() instanceof io.netty.handler.codec.http.FullHttpRequest full) {
            capture.request().feed(full.content());
            capture.request().finish();
        } else {
            requestBody = capture;
            follows = true;
        }
        ctx.fireChannelRead(refuse);
        if (!follows) {
            flush();
        }
    }

    /** Records a refusal (Sluice's own answer) on {@code capture}. */
    private static void refused(Capture capture, Decision decision, String detail) {
        capture.refused(decision.reason().httpStatus(), decision.reason().label(), decision.ruleId(), detail);
    }

    private ForwardRequest onRequest(ForwardRequest request) {
        flush();
        requestBody = null;
        Capture capture = start(request);
        if (capture == null) {
            return request;
        }
        if (request.request() instanceof io.netty.handler.codec.http.FullHttpRequest full) {
            capture.request().feed(full.content());
            capture.request().finish();
        } else {
            requestBody = capture;
        }
        return request.withResponseScan(ForwardRequest.ResponseScan.both(request.responseScan(),
                new ResponseCopy(this, context.captures(), capture, pendingSettings)));
    }

    /**
     * Starts the capture of {@code request} when its host is covered and its event id sampled: marks
     * the record, makes it the pending capture. Returns null (nothing done) otherwise.
     */
    private Capture start(ForwardRequest request) {
        CaptureStore store = context.captures();
        CaptureSettings settings = request.policy().capture();
        AuditEvent audit = request.audit();
        String host = request.target().target().host();
        if (store == null || settings == null || !settings.covers(host) || !settings.sampled(audit.eventId())) {
            return null;
        }
        audit.captured();
        String extension = audit.extensionOrNull();
        Capture capture = new Capture(audit.eventId(), context.clock().instant(),
                extension == null ? Extension.UNIDENTIFIED : extension, host, request.target().target().port(),
                request.request().method().name(), AuditEvent.maskTarget(request.request().uri()),
                request.request().headers().get(HttpHeaderNames.CONTENT_TYPE),
                request.request().headers().get(HttpHeaderNames.CONTENT_ENCODING), settings.maxBodyBytes());
        if (context.credentials() != null) {
            capture.scrubbing(context.credentials().forPolicy(request.policy())
                    .echoForms(extension == null ? Extension.UNIDENTIFIED : extension));
        }
        pending = capture;
        pendingSettings = settings;
        pendingAudit = audit;
        return capture;
    }

    /**
     * Hands the last capture to the store if its response did not (it was cut short, or refused). A
     * capture with neither response nor refusal whose record says {@code deny} was refused after this
     * phase (the credential phase): the record's status, reason and rule are its refusal.
     */
    private void flush() {
        if (pending != null) {
            pending.request().finish();
            if (pending.response() != null) {
                pending.response().finish();
            } else if (!pending.isRefused() && "deny".equals(pendingAudit.decisionOrNull())
                    && pendingAudit.statusCodeOrNull() != null) {
                pending.refused(pendingAudit.statusCodeOrNull(), pendingAudit.reasonOrNull(),
                        pendingAudit.ruleOrNull(), pendingAudit.errorOrNull());
            }
            context.captures().submit(pending, pendingSettings);
            pending = null;
            pendingSettings = null;
            pendingAudit = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        flush();
        requestBody = null;
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        flush();
        requestBody = null;
    }

    /** Copies the response as it streams; submits the capture at its end. */
    private static final class ResponseCopy implements ForwardRequest.ResponseScan {
        private final CapturePhase phase;
        private final CaptureStore store;
        private final Capture capture;
        private final CaptureSettings settings;

        ResponseCopy(CapturePhase phase, CaptureStore store, Capture capture, CaptureSettings settings) {
            this.phase = phase;
            this.store = store;
            this.capture = capture;
            this.settings = settings;
        }

        @Override
        public void onHead(HttpResponse head) {
            capture.responseHead(head.status().code(), head.headers().get(HttpHeaderNames.CONTENT_TYPE),
                    head.headers().get(HttpHeaderNames.CONTENT_ENCODING));
        }

        @Override
        public void onContent(ByteBuf content, boolean last, AuditEvent audit) {
            if (capture.response() == null) {
                return;
            }
            capture.response().feed(content);
            if (last) {
                capture.request().finish();
                capture.response().finish();
                capture.responseComplete();
                store.submit(capture, settings);
                if (phase.pending == capture) {
                    // the upstream connection shares the downstream's event loop: no capture is held after its end
                    phase.pending = null;
                    phase.pendingSettings = null;
                    phase.pendingAudit = null;
                }
            }
        }
    }
}
