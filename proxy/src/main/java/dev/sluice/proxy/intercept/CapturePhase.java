package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.capture.Capture;
import dev.sluice.proxy.capture.CaptureStore;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.rules.policy.CaptureSettings;
import dev.sluice.rules.policy.Extension;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
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

    CapturePhase(ProxyContext context) {
        this.context = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            ctx.fireChannelRead(onRequest(request));
            return;
        }
        if (msg instanceof HttpContent content && requestBody != null) {
            requestBody.request().feed(content.content());
            if (content instanceof LastHttpContent) {
                requestBody.request().finish();
                requestBody = null;
            }
        }
        ctx.fireChannelRead(msg);
    }

    private ForwardRequest onRequest(ForwardRequest request) {
        flush();
        requestBody = null;
        CaptureStore store = context.captures();
        CaptureSettings settings = request.policy().capture();
        AuditEvent audit = request.audit();
        String host = request.target().target().host();
        if (store == null || settings == null || !settings.covers(host) || !settings.sampled(audit.eventId())) {
            return request;
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
        if (request.request() instanceof io.netty.handler.codec.http.FullHttpRequest full) {
            capture.request().feed(full.content());
            capture.request().finish();
        } else {
            requestBody = capture;
        }
        pending = capture;
        pendingSettings = settings;
        return request.withResponseScan(ForwardRequest.ResponseScan.both(request.responseScan(),
                new ResponseCopy(this, store, capture, settings)));
    }

    /** Hands the last capture to the store if its response did not (it was cut short). */
    private void flush() {
        if (pending != null) {
            pending.request().finish();
            if (pending.response() != null) {
                pending.response().finish();
            }
            context.captures().submit(pending, pendingSettings);
            pending = null;
            pendingSettings = null;
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
                }
            }
        }
    }
}
