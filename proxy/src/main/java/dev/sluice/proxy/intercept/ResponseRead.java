package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.llm.UsageScanner;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.redact.BodyDecoding;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import dev.sluice.rules.redact.UnsupportedContentEncodingException;
import dev.sluice.rules.redflag.RedFlagAction;
import dev.sluice.rules.redflag.RedFlagFold;
import dev.sluice.rules.redflag.RedFlagRule;
import dev.sluice.rules.redflag.RedFlagScan;
import dev.sluice.rules.redflag.RedFlagSettings;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.AttributeKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The one reader of an intercepted response: what the LLM phase (model and token usage), the redaction
 * phase (report-mode credential scan, {@code redactions.response.<detector-id>}) and the red-flag phase
 * (the response rules) want of a JSON or {@code text/event-stream} response, read in one parse.
 *
 * <p>The body is decoded once ({@code gzip} / {@code deflate} undone, at most {@code limits.max_inspected_body}
 * decoded bytes read) and parsed once by a {@link UsageScanner} (a JSON document, or each event's
 * {@code data}), which reads the usage fields and hands every string value, escapes undone, on:
 * <ul>
 *   <li>the text values ({@link #TEXT_FIELDS}: {@code text}, {@code content}, {@code delta}, {@code arguments},
 *       {@code partial_json}, {@code thinking}, {@code refusal}) are one text, joined without a separator
 *       (so what a model writes across events reads as it is written), fed to one plain-text
 *       {@link StreamingRedactor} in report mode that carries the credential detectors and, as tap
 *       keywords ({@link RedFlagFold}), the response red-flag rules: a credential or a red-flag phrase
 *       split across events is found in that one pass (the redactor's carry-over spans chunks and events);</li>
 *   <li>every other string value, as a line {@code "name": "value"} (its member name, when it has one;
 *       the value decoded), goes to a second plain-text redactor with the credential detectors only
 *       (nothing is read twice).</li>
 * </ul>
 * The decoded text of one network chunk is fed at the chunk's end, and the red flags it completes are
 * acted on then ({@link StreamingRedactor#settleTap}): a {@code block} rule's match makes
 * {@link #stopReason()} non-null and the forwarder closes the stream after that chunk.
 *
 * <p>Where the redactor does not run (redaction off for the host) or cannot carry the rules (a rule that
 * cannot be folded, see {@link RedFlagFold#of}), the text values go to a {@link RedFlagScan} instead (the
 * second pass), from the same parse. A body of another type (or coding) is not read here, except that a
 * JSON type the parser does not read ({@code application/x-ndjson}) keeps the raw-byte JSON credential
 * scan of an identity-coded body.
 *
 * <p>One per request, made by the first phase that wants it ({@link #of}) and found by the later ones
 * through a channel attribute; used on the channel's event loop only.
 */
final class ResponseRead implements ForwardRequest.ResponseScan {

    /** The fields whose string values are the text of a response (what a model writes). */
    static final Set<String> TEXT_FIELDS = Set.of("text", "content", "delta", "arguments", "partial_json",
            "thinking", "refusal");
    /** Decoded text gathered before it is fed to a redactor within one chunk, in bytes. */
    private static final int FEED_BYTES = 32 * 1024;

    private static final AttributeKey<ResponseRead> KEY = AttributeKey.valueOf("sluice.response-read");

    private final AuditEvent audit;
    private final long maxDecodedBytes;
    /** For metrics and token accounts: given by the phase that asks for usage or red flags. */
    private @Nullable ProxyContext context;

    // what the phases asked for
    private @Nullable String usageHost;
    private @Nullable Duration tokenWindow;
    private @Nullable DetectorSet credentials;
    private @Nullable RedFlagSettings flagSettings;
    private List<RedFlagRule> rules = List.of();
    private Supplier<Set<String>> references = Set::of;

    // one response
    private @Nullable UsageScanner scanner;
    private @Nullable DecodedFeed body;
    private @Nullable StreamingRedactor text;
    private @Nullable StreamingRedactor others;
    private RedFlagFold.@Nullable Body flags;
    private @Nullable RedFlagScan scan;
    /** An identity-coded JSON type the parser does not read: its raw bytes, for credentials only. */
    private @Nullable StreamingRedactor raw;
    private final Gathered textBytes = new Gathered();
    private final Gathered otherBytes = new Gathered();
    private @Nullable String stop;

    private ResponseRead(AuditEvent audit, long maxDecodedBytes) {
        this.audit = audit;
        this.maxDecodedBytes = maxDecodedBytes;
    }

    /**
     * Returns the reader of {@code request}'s response, or null when none was made for it yet: then the
     * caller makes one with {@link #start} and attaches it.
     */
    static @Nullable ResponseRead find(Channel channel, ForwardRequest request) {
        ResponseRead read = channel.attr(KEY).get();
        return read != null && read.audit == request.audit() ? read : null;
    }

    /**
     * Returns {@code request} with its response read by the reader of {@link #find}, making one (and
     * attaching it to the returned request) when there is none; {@code configure} sets what the caller wants.
     */
    static ForwardRequest of(Channel channel, ForwardRequest request, java.util.function.Consumer<ResponseRead> configure) {
        ResponseRead read = find(channel, request);
        if (read != null) {
            configure.accept(read);
            return request;
        }
        read = new ResponseRead(request.audit(), request.policy().limits().maxInspectedBodyBytes());
        channel.attr(KEY).set(read);
        configure.accept(read);
        return request.withResponseScan(ForwardRequest.ResponseScan.both(request.responseScan(), read));
    }

    /** Reads the model and token usage (the LLM phase): reported when the body ends. */
    void usage(ProxyContext context, String host, Duration window) {
        this.context = context;
        this.usageHost = host;
        this.tokenWindow = window;
    }

    /** Counts credentials in the response (the redaction phase, a host with {@code redact: true}). */
    void credentials(DetectorSet detectors) {
        this.credentials = detectors;
    }

    /**
     * Runs the response red-flag rules (the red-flag phase).
     *
     * @param context for {@code sluice_red_flags_total}
     * @param settings the policy's {@code red_flags}
     * @param responseRules the response rules for the request's host and path, not empty
     * @param requestReferences what the request held, asked when the response head comes
     */
    void redFlags(ProxyContext context, RedFlagSettings settings, List<RedFlagRule> responseRules,
                  Supplier<Set<String>> requestReferences) {
        this.context = context;
        this.flagSettings = settings;
        this.rules = List.copyOf(responseRules);
        this.references = requestReferences;
    }

    @Override
    public void onHead(HttpResponse head) {
        reset();
        String type = head.headers().get(HttpHeaderNames.CONTENT_TYPE);
        String coding = head.headers().get(HttpHeaderNames.CONTENT_ENCODING);
        UsageScanner parser = UsageScanner.forContentType(type);
        if (parser == null) {
            boolean identity = coding == null || "identity".equalsIgnoreCase(coding);
            if (credentials != null && identity && BodyFormat.forContentType(type) == BodyFormat.JSON) {
                raw = credentials.newRedactor(BodyFormat.JSON, RedactionAction.REPORT, Long.MAX_VALUE);
            }
            return;
        }
        try {
            body = new DecodedFeed(BodyDecoding.decoder(BodyDecoding.parse(coding), maxDecodedBytes), parser::feed);
        } catch (UnsupportedContentEncodingException e) {
            return;
        }
        scanner = parser;
        RedFlagFold fold = rules.isEmpty() || flagSettings == null ? null : RedFlagFold.of(flagSettings);
        if (credentials != null) {
            if (fold != null) {
                flags = fold.textBody(rules, references.get());
                text = credentials.withTap(fold.keywords())
                        .newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, flags);
            } else {
                text = credentials.newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE);
            }
            others = credentials.newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE);
        }
        if (!rules.isEmpty() && flags == null) {
            scan = new RedFlagScan(rules, null, references.get(), "");
        }
        if (text == null && scan == null) {
            return; // usage only
        }
        if (others != null) {
            // the data of an event that is not JSON: read as text too, so nothing of the stream goes unread
            parser.onUnreadData((b, off, len, eventEnd) -> {
                otherBytes.add(b, off, len);
                if (eventEnd) {
                    otherBytes.add("\n");
                }
                if (otherBytes.length >= FEED_BYTES) {
                    feed(others, otherBytes);
                }
            });
        }
        parser.onStrings((field, value) -> {
            if (field != null && TEXT_FIELDS.contains(field)) {
                if (text != null) {
                    textBytes.add(value);
                    if (textBytes.length >= FEED_BYTES) {
                        feed(text, textBytes);
                    }
                }
                if (scan != null) {
                    found(scan.feed(value));
                }
            } else if (others != null) {
                // as the JSON had it, one member a line: detectors that read a key and its quoted value
                // (a Docker config's "auth": "...") read it here
                if (field != null) {
                    otherBytes.add("\"");
                    otherBytes.add(field);
                    otherBytes.add("\": ");
                }
                otherBytes.add("\"");
                otherBytes.add(value);
                otherBytes.add("\"\n");
                if (otherBytes.length >= FEED_BYTES) {
                    feed(others, otherBytes);
                }
            }
        });
    }

    private void reset() {
        scanner = null;
        body = null;
        text = null;
        others = null;
        flags = null;
        scan = null;
        raw = null;
        textBytes.length = 0;
        otherBytes.length = 0;
    }

    @Override
    public void onContent(ByteBuf content, boolean last, AuditEvent record) {
        if (raw != null) {
            rawContent(content, last, record);
            return;
        }
        if (scanner == null) {
            return;
        }
        body.feed(content);
        if (last) {
            body.finish();
            scanner.finish();
        }
        if (text != null) {
            feed(text, textBytes);
            feed(others, otherBytes);
            if (last) {
                text.finish();
                others.finish();
            } else if (flags != null) {
                text.settleTap(); // what this chunk completed is acted on at this chunk
            }
            if (flags != null) {
                found(flags.drain());
            }
        }
        if (scan != null) {
            found(scan.flush());
        }
        if (!last) {
            return;
        }
        if (text != null) {
            Map<String, Long> findings = new TreeMap<>(text.findings());
            others.findings().forEach((id, n) -> findings.merge(id, n, Long::sum));
            findings.forEach((id, n) -> record.addRedactions("response." + id, n));
        }
        if (usageHost != null) {
            report(scanner, record);
        }
        reset();
    }

    private void rawContent(ByteBuf content, boolean last, AuditEvent record) {
        try {
            if (content.isReadable()) {
                raw.feed(content.nioBuffer());
            }
        } catch (BodyTooLargeException e) {
            raw = null;
            return;
        }
        if (last) {
            raw.finish();
            raw.findings().forEach((id, n) -> record.addRedactions("response." + id, n));
            raw = null;
        }
    }

    private static void feed(StreamingRedactor redactor, Gathered gathered) {
        if (gathered.length == 0) {
            return;
        }
        try {
            redactor.feed(gathered.bytes, 0, gathered.length);
        } catch (BodyTooLargeException e) {
            throw new AssertionError(e); // no limit
        }
        gathered.length = 0;
    }

    /** Records the rules flagged for the first time; the first {@code block} one stops the stream. */
    private void found(List<RedFlagRule> fresh) {
        for (RedFlagRule rule : fresh) {
            audit.addRedFlag(rule.id());
            context.metrics().redFlag(extension(), rule.id());
            if (rule.action() == RedFlagAction.BLOCK && stop == null) {
                stop = "red_flag: " + rule.id() + " in the response, stream closed";
            }
        }
    }

    private void report(UsageScanner usage, AuditEvent record) {
        if (usage.model() != null) {
            record.llmModel(usage.model());
        }
        if (!usage.hasUsage()) {
            return;
        }
        long in = Math.max(0, usage.inputTokens());
        long out = Math.max(0, usage.outputTokens());
        record.addLlmUsage(in, out);
        context.metrics().llmTokens(extension(), usageHost, in, out);
        if (in + out > 0) {
            context.budgets().tokenAccount(extension(), tokenWindow).add(in + out);
        }
    }

    private String extension() {
        String name = audit.extensionOrNull();
        return name == null ? Extension.UNIDENTIFIED : name;
    }

    @Override
    public @Nullable String stopReason() {
        return stop;
    }

    /** Decoded text gathered within one chunk, UTF-8. */
    private static final class Gathered {
        byte[] bytes = new byte[1024];
        int length;

        void add(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            add(b, 0, b.length);
        }

        void add(byte[] b, int off, int len) {
            if (length + len > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + len));
            }
            System.arraycopy(b, off, bytes, length, len);
            length += len;
        }
    }
}
