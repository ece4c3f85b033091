package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.SigV4;
import dev.sluice.rules.policy.RedactionSettings;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyPlan;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redflag.RedFlagFold;
import dev.sluice.rules.redact.HeaderScanner;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.UnsupportedContentEncodingException;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The redaction phase of an intercepted tunnel to a host with {@code redact: true}, between the request
 * phase and the forwarder: scans every request's headers (except the provider's own auth headers) and
 * passes its body through the {@link dev.sluice.rules.redact.StreamingRedactor} of the policy's {@code redaction} settings —
 * after undoing {@code gzip} / {@code deflate} (capped at {@code limits.max_inspected_body}) — and hands
 * the forwarder the result with its framing (the trailer fields of a chunked body are scanned as header
 * fields are): bodies up to {@code limits.max_buffered_body} are held
 * whole and sent with a {@code Content-Length} (byte-identical when nothing changed), larger ones
 * stream; binary bodies are never rewritten ({@code redaction.binary}). See {@link InspectedBody}.
 * A SigV4-signed request cannot be changed, so a match there blocks unless the action is
 * {@code report}. Responses of JSON and {@code text/event-stream} types are scanned in report mode as
 * they stream, on their decoded text, by the response's one reader ({@link ResponseRead}, which also
 * runs the response red flags in the same redactor pass); what is found there is counted under
 * {@code response.<detector-id>}.
 *
 * <p>Answers (through the forwarder): 403 {@code credential_detected} / {@code signed_body} (block),
 * 413 {@code body_too_large}, 415 {@code unsupported_encoding}, 400 {@code malformed_request} for a body
 * that does not decode. A body is never passed on unscanned. Audit records list detector ids and counts,
 * never a value.
 *
 * <p>When the policy has {@code red_flags} and the body is JSON, the redactor also finds the red-flag rules'
 * literals in its one keyword scan and runs their detectors around them ({@link RedFlagFold}); the
 * {@link RedFlagPhase} reads what they flagged instead of decoding the body a second time.
 */
final class RedactionPhase extends ChannelInboundHandlerAdapter {

    private final boolean enabled;
    /** What this connection's earlier requests showed to be clean (shared by the streams of an h2 connection). */
    private final CleanValues clean;
    private InspectedBody body;
    private boolean dropping;
    /** For the trailer fields of the body in progress: the header scan's action, its block reason, the record. */
    private RedactionAction trailerAction;
    private Reason trailerBlockReason;
    private AuditEvent bodyAudit;

    RedactionPhase(boolean enabled) {
        this(enabled, new CleanValues());
    }

    /** @param clean the clean values of the downstream connection, used on its event loop only */
    RedactionPhase(boolean enabled, CleanValues clean) {
        this.enabled = enabled;
        this.clean = clean;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            onRequest(ctx, request);
        } else if (msg instanceof ExchangeControl.ClientClosedMidBody closed) {
            // The body will never end: a body still held whole (its head never went on) is recorded
            // here and released; then the forwarder ends the exchange and closes the connection.
            if (body != null) {
                body.abandon(closed.error());
                body = null;
            }
            dropping = false;
            ctx.fireChannelRead(msg);
        } else if (msg instanceof HttpContent content) {
            onContent(ctx, content);
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest request) {
        if (body != null) {
            body.release();
            body = null;
        }
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
        AuditEvent audit = request.audit();

        clean.use(settings.detectors());
        HeaderScanner.Result scanned = scanHeaders(entries);
        if (scanned != null) {
            scanned.findings().forEach(audit::addRedactions);
            if (plan.action() == RedactionAction.BLOCK) {
                refuse(ctx, request, Decision.deny(plan.blockReason(), BuiltinRules.REDACTION), "credential in a header");
                return;
            }
            if (plan.action() == RedactionAction.REDACT) {
                headers.clear();
                scanned.headers().forEach(e -> headers.add(e.getKey(), e.getValue()));
            }
        }

        // The request-target too: a token in a path segment or a query value (RFC 9112 section 3.2).
        HeaderScanner.TargetResult target = clean.cleanTarget(uri) ? null : clean.targetScanner().scanTarget(uri);
        if (target != null && !target.hasFindings()) {
            clean.addCleanTarget(uri);
        } else if (target != null) {
            target.findings().forEach(audit::addRedactions);
            if (plan.action() == RedactionAction.BLOCK) {
                refuse(ctx, request, Decision.deny(plan.blockReason(), BuiltinRules.REDACTION), "credential in the request-target");
                return;
            }
            if (plan.action() == RedactionAction.REDACT) {
                request.request().setUri(target.target());
                audit.urlPath(target.target());
            }
        }

        boolean hasBody = HttpUtil.isTransferEncodingChunked(request.request())
                || HttpUtil.getContentLength(request.request(), 0L) > 0;
        ForwardRequest outgoing = ResponseRead.of(ctx.channel(), request, read -> read.credentials(settings.detectors()));
        if (!hasBody) {
            ctx.fireChannelRead(outgoing);
            return;
        }
        BodyDecoding.Coding coding;
        try {
            // every field line: two lines of one coding each are a list of two codings (RFC 9110 section 5.3)
            List<String> codings = headers.getAll(HttpHeaderNames.CONTENT_ENCODING);
            coding = BodyDecoding.parse(codings.isEmpty() ? null : String.join(", ", codings));
        } catch (UnsupportedContentEncodingException e) {
            refuse(ctx, request, Decision.deny(Reason.UNSUPPORTED_ENCODING, BuiltinRules.REDACTION_ENCODING), e.getMessage());
            return;
        }
        long cap = request.policy().limits().maxInspectedBodyBytes();
        long declared = HttpUtil.getContentLength(request.request(), -1L);
        if (coding == BodyDecoding.Coding.IDENTITY && declared > cap) {
            refuse(ctx, request, Decision.deny(Reason.BODY_TOO_LARGE, BuiltinRules.MAX_INSPECTED_BODY),
                    "body over " + cap + " bytes");
            return;
        }
        BodyPlan bodyPlan = BodyPlan.of(headers.get(HttpHeaderNames.CONTENT_TYPE), plan.action(), settings.binary());
        // The red flags of a JSON body run in the redactor's pass (RedFlagPhase reads them from there).
        RedFlagFold.Body flags = RedFlagPhase.foldedRequestFlags(outgoing, bodyPlan);
        DetectorSet detectors = settings.detectors();
        if (flags != null) {
            detectors = detectors.withTap(RedFlagFold.of(request.policy().redFlags()).keywords());
            ctx.channel().attr(RedFlagPhase.FOLDED).set(new RedFlagPhase.Folded(outgoing.audit(), flags));
        }
        // The head goes on with the body, once its framing is known (InspectedBody).
        body = InspectedBody.start(ctx, outgoing, bodyPlan, plan.blockReason(), coding, detectors, cap,
                request.policy().limits().maxBufferedBodyBytes(), flags);
        trailerAction = plan.action();
        trailerBlockReason = plan.blockReason();
        bodyAudit = audit;
    }

    /**
     * Scans the header values this connection has not shown clean yet, one at a time, as
     * {@link HeaderScanner#scan} would scan them all (the provider auth headers skipped); returns the
     * headers with the redacted values and what was found, or null when nothing was found.
     */
    private HeaderScanner.Result scanHeaders(List<Map.Entry<String, String>> entries) {
        List<Map.Entry<String, String>> out = null;
        Map<String, Long> findings = new java.util.TreeMap<>();
        for (int i = 0; i < entries.size(); i++) {
            Map.Entry<String, String> header = entries.get(i);
            String value = header.getValue();
            if (value == null || value.isEmpty() || clean.cleanHeaderValue(value)
                    || HeaderScanner.PROVIDER_AUTH_HEADERS.contains(header.getKey().toLowerCase(java.util.Locale.ROOT))) {
                continue;
            }
            HeaderScanner.Result one = clean.headerScanner().scan(List.of(header));
            if (!one.hasFindings()) {
                clean.addCleanHeaderValue(value);
                continue;
            }
            if (out == null) {
                out = new ArrayList<>(entries);
            }
            out.set(i, one.headers().get(0));
            one.findings().forEach((id, n) -> findings.merge(id, n, Long::sum));
        }
        return out == null ? null : new HeaderScanner.Result(out, findings);
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
        if (body == null) {
            ctx.fireChannelRead(content);
            return;
        }
        if (last && !((LastHttpContent) content).trailingHeaders().isEmpty() && !scanTrailers(ctx, (LastHttpContent) content)) {
            return;
        }
        InspectedBody.Progress progress = body.onContent(ctx, content);
        if (progress != InspectedBody.Progress.MORE) {
            body = null;
            dropping = progress == InspectedBody.Progress.FAILED && !last;
        }
    }

    /**
     * Scans the trailer fields of a chunked body (RFC 9112 section 7.1.2) as header fields are scanned:
     * a finding is counted on the record; {@code redact} replaces the value in place, {@code block} ends
     * the exchange (refused, or aborted when the head already went on). Returns false when it ended it.
     */
    private boolean scanTrailers(ChannelHandlerContext ctx, LastHttpContent content) {
        HttpHeaders trailers = content.trailingHeaders();
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        trailers.forEach(entries::add);
        HeaderScanner.Result scanned = scanHeaders(entries);
        if (scanned == null) {
            return true;
        }
        scanned.findings().forEach(bodyAudit::addRedactions);
        if (trailerAction == RedactionAction.BLOCK) {
            body.refuse(ctx, content, Decision.deny(trailerBlockReason, BuiltinRules.REDACTION),
                    "credential in a trailer field");
            body = null;
            return false;
        }
        if (trailerAction == RedactionAction.REDACT) {
            trailers.clear();
            scanned.headers().forEach(e -> trailers.add(e.getKey(), e.getValue()));
        }
        return true;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (body != null) {
            body.abandon();
            body = null;
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        if (body != null) {
            body.release();
            body = null;
        }
    }

    private void refuse(ChannelHandlerContext ctx, ForwardRequest request, Decision decision, String detail) {
        ctx.fireChannelRead(new ExchangeControl.Refuse(request, decision, detail));
    }
}
