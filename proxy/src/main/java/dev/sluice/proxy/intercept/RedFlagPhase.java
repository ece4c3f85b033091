package dev.sluice.proxy.intercept;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.proxy.http.HttpPipeline;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.llm.UsageScanner;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyPlan;
import dev.sluice.rules.redact.UnsupportedContentEncodingException;
import dev.sluice.rules.redflag.RedFlagAction;
import dev.sluice.rules.redflag.RedFlagDetector;
import dev.sluice.rules.redflag.RedFlagFold;
import dev.sluice.rules.redflag.RedFlagRule;
import dev.sluice.rules.redflag.RedFlagScan;
import dev.sluice.rules.redflag.RedFlagSettings;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The red-flag phase of an intercepted tunnel ({@code red_flags}), between the redaction phase and the
 * forwarder, so that it reads the request body as it is sent (after redaction).
 *
 * <p>Requests with a JSON body: the body's string values (decoded by {@link UsageScanner}'s streaming
 * JSON reader, escapes undone, after undoing {@code gzip} / {@code deflate}) go through a
 * {@link RedFlagScan} of the rules for the request's host and path. The request head is held until the
 * body's first chunk is read (unless it still carries {@code Expect: 100-continue}, which the origin
 * must answer before the body comes): a {@code block} rule matching there (always, for a body the redaction
 * phase held whole) refuses the request with 403 {@code red_flag} before anything goes upstream, and the
 * body goes on behind the refusal ({@link ExchangeControl.Refuse#bodyAsSent()}) for the capture phase,
 * the forwarder dropping it; a match in a later chunk ends the exchange with {@link ExchangeControl.Abort},
 * which closes the upstream connection before the body's end and answers 403 {@code red_flag}, and the
 * rest of the body is dropped here.
 *
 * <p>Responses (JSON or {@code text/event-stream}): the text values of each body or event ({@code text},
 * {@code content}, {@code delta}, {@code arguments}, {@code partial_json}, {@code thinking},
 * {@code refusal}) go through the response rules, joined without a separator, so a match split across
 * events is found: in the response's one reader ({@link ResponseRead}), in the same redactor pass as the
 * response's credential scan where the host has {@code redact: true}. A {@code block} rule matching there
 * ends the stream after the chunk that held the match (the forwarder closes the connection; the record
 * says {@code error: red_flag: <id> in the response, stream closed}).
 *
 * <p>Every match: {@code AuditEvent.addRedFlag(rule)} and {@code sluice_red_flags_total{extension,rule}},
 * at most once per rule and body.
 *
 * <p>Where the redaction phase reads a JSON request body (a host with {@code redact: true}), the request
 * rules run in the redactor's own pass ({@link RedFlagFold}: their literals in its keyword scan, their
 * detectors on the decoded string around each hit) and this phase only takes what they flagged, chunk by
 * chunk, with the same answers; it decodes and reads the body itself (a second pass, {@link RedFlagScan}
 * over the JSON reader's string values) where the redactor does not read it (redaction off for the host, a
 * body that is not JSON, a rule that cannot be folded).
 */
final class RedFlagPhase extends ChannelInboundHandlerAdapter {

    /** Pipeline name. */
    static final String NAME = HttpPipeline.RED_FLAGS;

    private final ProxyContext context;

    // the request body being read
    private ForwardRequest held;
    private BodyRead body;
    private boolean dropping;

    RedFlagPhase(ProxyContext context) {
        this.context = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            onRequest(ctx, request);
        } else if (msg instanceof HttpContent content) {
            onContent(ctx, content);
        } else {
            if (msg instanceof ExchangeControl.ClientClosedMidBody && held != null) {
                // The forwarder ends the exchange (and writes its record) once it has the request.
                ctx.fireChannelRead(held);
                held = null;
            }
            if (!(msg instanceof ExchangeControl.Refuse)) {
                body = null;
                dropping = false;
            }
            ctx.fireChannelRead(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest request) {
        held = null;
        body = null;
        dropping = false;
        RedFlagSettings settings = request.policy().redFlags();
        if (settings == null || settings.rules().isEmpty()) {
            ctx.fireChannelRead(request);
            return;
        }
        String host = request.target().target().host();
        String uri = request.request().uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        List<RedFlagRule> requestRules = settings.rulesFor(host, path, false);
        List<RedFlagRule> responseRules = settings.rulesFor(host, path, true);
        RedFlagDetector collector = collector(responseRules);
        Folded folded = ctx.channel().attr(FOLDED).getAndSet(null);
        if (folded != null && folded.audit() != request.audit()) {
            folded = null; // left by a request that never came here
        }
        RedFlagScan requestScan = new RedFlagScan(requestRules, collector, Set.of(), "\n");
        Supplier<Set<String>> references = folded != null ? folded.flags()::references : requestScan::references;
        String extension = extension(request.audit());
        ForwardRequest outgoing = responseRules.isEmpty() ? request
                : ResponseRead.of(ctx.channel(), request, read -> read.redFlags(context, settings, responseRules, references));
        HttpHeaders headers = request.request().headers();
        boolean hasBody = HttpUtil.isTransferEncodingChunked(request.request())
                || HttpUtil.getContentLength(request.request(), 0L) > 0;
        BodyRead read = !hasBody || !requestScan.active() ? null
                : folded != null ? BodyRead.folded(folded.flags())
                : BodyRead.start(headers.get(HttpHeaderNames.CONTENT_TYPE), headers.get(HttpHeaderNames.CONTENT_ENCODING),
                        request.policy().limits().maxInspectedBodyBytes(), requestScan);
        if (read == null) {
            ctx.fireChannelRead(outgoing);
            return;
        }
        read.sink = rule -> flag(outgoing.audit(), extension, rule);
        body = read;
        if (HttpUtil.is100ContinueExpected(request.request())) {
            // The client waits for the origin's 100 before it sends the body: holding the head would
            // stall both. A block match then aborts the upstream request mid-body.
            ctx.fireChannelRead(outgoing);
            return;
        }
        held = outgoing;
    }

    private void onContent(ChannelHandlerContext ctx, HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        if (dropping) {
            content.release();
            if (last) {
                dropping = false;
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
            return;
        }
        if (body == null) {
            ctx.fireChannelRead(content);
            return;
        }
        body.feed(content.content(), last);
        RedFlagRule blocking = body.blocking;
        if (blocking != null) {
            body = null;
            Decision denial = Decision.deny(Reason.RED_FLAG, BuiltinRules.redFlag(blocking.id()));
            String detail = "red flag " + blocking.id() + " in the request body";
            if (held != null) {
                // Nothing went upstream: the body goes on behind the refusal, for the capture phase to
                // keep (it is the body as it would have been sent); the forwarder drops it.
                ctx.fireChannelRead(new ExchangeControl.Refuse(held, denial, detail, true));
                held = null;
                ctx.fireChannelRead(content);
                return;
            }
            content.release();
            ctx.fireChannelRead(new ExchangeControl.Abort(denial, detail));
            if (last) {
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            } else {
                dropping = true;
            }
            return;
        }
        if (held != null) {
            ctx.fireChannelRead(held);
            held = null;
        }
        if (last) {
            body = null;
        }
        ctx.fireChannelRead(content);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (held != null) {
            // The forwarder writes the record of a request the client abandoned.
            ctx.fireChannelRead(held);
            held = null;
        }
        body = null;
        ctx.fireChannelInactive();
    }

    private void flag(AuditEvent audit, String extension, RedFlagRule rule) {
        audit.addRedFlag(rule.id());
        context.metrics().redFlag(extension, rule.id());
    }

    private static String extension(AuditEvent audit) {
        String name = audit.extensionOrNull();
        return name == null ? Extension.UNIDENTIFIED : name;
    }

    /** What {@link RedactionPhase} leaves for this phase: the red flags its redactor runs on the request's body. */
    static final io.netty.util.AttributeKey<Folded> FOLDED = io.netty.util.AttributeKey.valueOf("sluice.red-flags.folded");

    /** The red flags of the request whose audit record is {@code audit}, found in the redactor's pass. */
    record Folded(AuditEvent audit, RedFlagFold.Body flags) {
    }

    /**
     * Returns the red flags to run in the redactor's pass for the body of {@code request} (the request
     * rules for its host and path, and the reference collector of its response rules), or null when this
     * phase reads the body itself: no {@code red_flags}, a body that is not JSON (the JSON reader's types:
     * {@code application/json}, {@code +json}), or a rule that cannot be folded ({@link RedFlagFold#of}).
     */
    static RedFlagFold.@Nullable Body foldedRequestFlags(ForwardRequest request, BodyPlan plan) {
        RedFlagSettings settings = request.policy().redFlags();
        if (settings == null || settings.rules().isEmpty() || plan.format() != BodyFormat.JSON
                || !jsonType(request.request().headers().get(HttpHeaderNames.CONTENT_TYPE))) {
            return null;
        }
        RedFlagFold fold = RedFlagFold.of(settings);
        if (fold == null) {
            return null;
        }
        String host = request.target().target().host();
        String uri = request.request().uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        List<RedFlagRule> requestRules = settings.rulesFor(host, path, false);
        RedFlagDetector collector = collector(settings.rulesFor(host, path, true));
        if (requestRules.isEmpty() && collector == null) {
            return null;
        }
        return fold.body(requestRules, collector, Set.of());
    }

    /** Whether the JSON reader reads a body of this type as one JSON document ({@link UsageScanner#forContentType}). */
    private static boolean jsonType(String contentType) {
        if (contentType == null) {
            return false;
        }
        int semi = contentType.indexOf(';');
        String type = (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(java.util.Locale.ROOT);
        return type.equals("application/json") || type.endsWith("+json");
    }

    private static RedFlagDetector collector(List<RedFlagRule> responseRules) {
        return responseRules.stream().filter(r -> r.id().equals("internal_reference"))
                .map(RedFlagRule::detector).findFirst().orElse(null);
    }

    /** One body read for red flags: decoding, the JSON reader, the scan (or the redactor's flags). */
    private static final class BodyRead {
        private final UsageScanner reader;
        private RedFlagScan scan;
        private final DecodedFeed body;
        /** The flags the redactor finds, for a body it reads (then nothing else is read here). */
        private RedFlagFold.Body folded;
        java.util.function.Consumer<RedFlagRule> sink;
        RedFlagRule blocking;

        private BodyRead(UsageScanner reader, BodyDecoding.Decoder decoder) {
            this.reader = reader;
            this.body = reader == null ? null : new DecodedFeed(decoder, reader::feed);
        }

        /** The read of a body whose red flags the redactor finds: only what it flagged is taken here. */
        static BodyRead folded(RedFlagFold.Body flags) {
            BodyRead read = new BodyRead(null, null);
            read.folded = flags;
            return read;
        }

        /**
         * Returns the read of a JSON or event-stream body (its every string value), or null when the body
         * is of another type or coding (nothing is read then).
         */
        static BodyRead start(String contentType, String contentEncoding, long maxDecodedBytes, RedFlagScan scan) {
            UsageScanner reader = UsageScanner.forContentType(contentType);
            if (reader == null) {
                return null;
            }
            BodyDecoding.Decoder decoder;
            try {
                decoder = BodyDecoding.decoder(BodyDecoding.parse(contentEncoding), maxDecodedBytes);
            } catch (UnsupportedContentEncodingException e) {
                return null;
            }
            BodyRead read = new BodyRead(reader, decoder);
            read.scan = scan;
            reader.onStrings((field, value) -> read.found(scan.feed(value)));
            return read;
        }

        private void found(List<RedFlagRule> fresh) {
            for (RedFlagRule rule : fresh) {
                if (sink != null) {
                    sink.accept(rule);
                }
                if (rule.action() == RedFlagAction.BLOCK && blocking == null) {
                    blocking = rule;
                }
            }
        }

        void feed(ByteBuf content, boolean last) {
            if (folded != null) {
                // the redactor before this phase has read this chunk (and at the last one, finished)
                found(folded.drain());
                return;
            }
            body.feed(content);
            if (last) {
                body.finish();
                reader.finish();
            }
            // what this chunk gathered is scanned now, so that a match is acted on at this chunk
            found(scan.flush());
        }
    }
}
