package dev.sluice.proxy.intercept;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.proxy.credential.Credentials;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.credential.CredentialRewriter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.redact.BodyDecoding;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The credential phase, right before the forwarder (after redaction, so that the value it injects is
 * not redacted): asks {@link CredentialRewriter} about each request head. On an intercepted leg it swaps
 * the extension's placeholders for the real values where the credential's {@code inject} allows it
 * ({@code credentials} in the audit record, {@code sluice_credential_injections_total}); on every leg a
 * placeholder left anywhere in the head is refused with 403 {@code credential_host_mismatch} (and 503
 * {@code credential_unavailable} when its value cannot be read), with one audit record, and nothing of
 * the request is forwarded (its body is dropped). The body of a request from an extension that holds
 * credentials is held whole (up to {@code limits.max_buffered_body}; gzip and deflate undone and redone) and decided
 * the same way: placeholders swapped in JSON and form bodies where {@code inject.body} allows it,
 * any other placeholder refused; it then goes on with a recomputed {@code Content-Length}. A larger body
 * streams on through a {@link PlaceholderWatch} (a placeholder in it ends the exchange before the request's
 * end: {@link ExchangeControl.Abort}); a body coded other than gzip or deflate is refused, 415
 * {@code unsupported_encoding}. A SigV4 request whose access key id is the placeholder of an
 * {@code inject.sigv4} credential is held whole and signed again with the real key pair
 * ({@link dev.sluice.proxy.credential.SigV4Signer}); unsigned or streaming payloads are refused, 403
 * {@code sigv4_refused}.
 *
 * <p>Responses (intercepted legs): every real value of the extension's credentials — raw, JSON-escaped
 * ({@code \/}), percent-encoded and base64 — is replaced by its placeholder in the response head and
 * body as they stream (an occurrence split across chunks included), so an origin that echoes a key
 * never hands it to the sandbox. A body whose length may change loses its {@code Content-Length} and
 * goes chunked (or is delimited by the close when the connection ends with it); the bodies of HTTP/1.0
 * exchanges and HEAD responses are not rewritten (their heads are). A request that carries an injected
 * credential asks for {@code Accept-Encoding: identity}, any other keeps only gzip, deflate and identity;
 * a gzip or deflate response body is decoded, scrubbed and sent identity-coded, and one in another
 * coding is refused before a byte is relayed, 502 {@code response_not_scrubbable}.
 */
public final class CredentialPhase extends ChannelDuplexHandler {

    /** Pipeline name of this phase. */
    public static final String NAME = "credentials";

    private final Credentials credentials;
    private final boolean intercepted;
    private boolean dropping;
    /** The request whose body is being held for the body decision, or null. */
    private ForwardRequest held;
    private io.netty.buffer.CompositeByteBuf heldBody;
    private Credentials.Snapshot heldSnapshot;
    /** Real-value forms and their placeholder forms for the response in progress, or null. */
    private Map<String, String> scrub;
    private int longest;
    private String carry = "";
    private boolean scrubBody;
    private boolean scrubFraming;
    /** Undoes the response body's gzip or deflate before it is scrubbed, or null for identity. */
    private BodyDecoding.Decoder responseDecoder;
    /** Watches a request body that streams on (too large to hold) for placeholders, or null. */
    private PlaceholderWatch watch;
    private ForwardRequest watched;
    /** The SigV4 signature of the request in progress to make again with the real key pair, or null. */
    private dev.sluice.rules.credential.SigV4Placeholder.Signed resign;
    private boolean resignUnsigned;

    /**
     * @param credentials the running credential state
     * @param intercepted whether the requests of this pipeline go on an intercepted, certificate-verified leg
     */
    public CredentialPhase(Credentials credentials, boolean intercepted) {
        this.credentials = credentials;
        this.intercepted = intercepted;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            dropping = false;
            releaseHeld();
            onRequest(ctx, request);
        } else if (msg instanceof ExchangeControl.ClientClosedMidBody closed) {
            dropping = false;
            if (held != null) {
                held.audit().error(closed.error()).emit();
                releaseHeld();
            }
            ctx.fireChannelRead(msg);
        } else if (msg instanceof HttpContent content && held != null) {
            onHeldContent(ctx, content);
        } else if (msg instanceof HttpContent content && watch != null) {
            onWatchedContent(ctx, content);
        } else if (msg instanceof HttpContent content && dropping) {
            content.release();
            if (content instanceof LastHttpContent) {
                dropping = false;
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest incoming) {
        ForwardRequest request = incoming;
        Credentials.Snapshot snapshot = credentials.forPolicy(request.policy());
        HttpHeaders headers = request.request().headers();
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        String extension = request.audit().extensionOrNull();
        // HTTP/1.0 clients cannot take a chunked body, and a HEAD response has none: their heads only
        scrubFraming = request.request().protocolVersion().equals(HttpVersion.HTTP_1_1)
                && !request.request().method().equals(io.netty.handler.codec.http.HttpMethod.HEAD);
        scrub = intercepted ? scrubTable(snapshot, extension) : null;
        if (scrub != null) {
            // Fail closed on a response body Sluice could not scrub (docs/credentials.md#responses).
            request = request.withResponseScan(ForwardRequest.ResponseScan.both(request.responseScan(),
                    new CodingGuard(scrubFraming)));
            narrowAcceptEncoding(headers);
        }
        resign = null;
        var sig = dev.sluice.rules.credential.SigV4Placeholder.decide(snapshot.table(), extension, intercepted,
                request.target().target().host(), request.target().target().port(), request.request().uri(), entries);
        List<Map.Entry<String, String>> decided = entries;
        switch (sig.verdict()) {
            case REFUSE -> {
                dropping = !(request.request() instanceof io.netty.handler.codec.http.FullHttpRequest);
                ctx.fireChannelRead(new ExchangeControl.Refuse(request, Decision.deny(Reason.SIGV4_REFUSED,
                        BuiltinRules.credential(sig.signed().grant().credential().name())), sig.detail()));
                return;
            }
            case SIGN -> {
                if (request.websocket() != null) {
                    dropping = !(request.request() instanceof io.netty.handler.codec.http.FullHttpRequest);
                    ctx.fireChannelRead(new ExchangeControl.Refuse(request, Decision.deny(Reason.WEBSOCKET_REFUSED,
                            BuiltinRules.credential(sig.signed().grant().credential().name())),
                            "credentials are not injected into WebSocket handshakes"));
                    return;
                }
                // the placeholder key id (and any token the client made up) are replaced when the request is signed
                resign = sig.signed();
                resignUnsigned = dev.sluice.rules.credential.SigV4Placeholder.UNSIGNED_PAYLOAD
                        .equalsIgnoreCase(headers.get("x-amz-content-sha256", "").strip());
                decided = new ArrayList<>();
                for (Map.Entry<String, String> e : entries) {
                    if (!e.getKey().equalsIgnoreCase("authorization")
                            && !e.getKey().equalsIgnoreCase("x-amz-security-token")) {
                        decided.add(e);
                    }
                }
            }
            default -> {
            }
        }
        CredentialRewriter.Result r = CredentialRewriter.decide(snapshot.table(), extension, intercepted,
                request.target().target().host(), request.target().target().port(), request.request().uri(), decided,
                snapshot.vault()::value);
        switch (r.outcome()) {
            case PASS -> passOrHold(ctx, request, snapshot, extension);
            case REWRITTEN -> {
                if (request.websocket() != null) {
                    // The origin's WebSocket messages are not scrubbed of the real value (frames are relayed as
                    // they come): a key injected into the handshake could be echoed into the sandbox. Fail closed.
                    dropping = !(request.request() instanceof io.netty.handler.codec.http.FullHttpRequest);
                    ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                            Decision.deny(Reason.WEBSOCKET_REFUSED, BuiltinRules.credential(r.injected().get(0))),
                            "credentials are not injected into WebSocket handshakes"));
                    return;
                }
                headers.clear();
                r.headers().forEach(e -> headers.add(e.getKey(), e.getValue()));
                request.request().setUri(r.uri());
                r.injected().forEach(request.audit()::credentialInjected);
                headers.set(HttpHeaderNames.ACCEPT_ENCODING, "identity");
                passOrHold(ctx, request, snapshot, extension);
            }
            case MISMATCH, UNAVAILABLE -> {
                Reason reason = r.outcome() == CredentialRewriter.Outcome.MISMATCH
                        ? Reason.CREDENTIAL_HOST_MISMATCH : Reason.CREDENTIAL_UNAVAILABLE;
                dropping = !(request.request() instanceof io.netty.handler.codec.http.FullHttpRequest);
                ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                        Decision.deny(reason, BuiltinRules.credential(r.credential())), r.detail()));
            }
            default -> throw new IllegalStateException(r.outcome().toString());
        }
    }

    /**
     * Forwards {@code request}, or holds it while its body arrives when its extension holds credentials
     * and the body is identity-coded: the body is then decided whole ({@link CredentialRewriter#decideBody}),
     * up to {@code limits.max_buffered_body}; a larger body goes on as it streams, watched for placeholders
     * ({@link PlaceholderWatch}). A SigV4 request to sign again is held whole (a larger one is 413), a body
     * coded other than gzip or deflate is 415.
     */
    private void passOrHold(ChannelHandlerContext ctx, ForwardRequest request, Credentials.Snapshot snapshot,
                            String extension) {
        io.netty.handler.codec.http.HttpRequest head = request.request();
        boolean hasBody = HttpUtil.isTransferEncodingChunked(head) || HttpUtil.getContentLength(head, 0L) > 0;
        if (resign != null && (!hasBody || head instanceof io.netty.handler.codec.http.FullHttpRequest)) {
            byte[] body = head instanceof io.netty.handler.codec.http.FullHttpRequest full
                    ? io.netty.buffer.ByteBufUtil.getBytes(full.content()) : new byte[0];
            if (signAgain(ctx, request, body)) {
                ctx.fireChannelRead(request);
            }
            return;
        }
        if (!hasBody || head instanceof io.netty.handler.codec.http.FullHttpRequest
                || snapshot.table().grants(extension).isEmpty()) {
            ctx.fireChannelRead(request);
            return;
        }
        String coding = coding(head);
        if (coding == null) {
            // a body Sluice cannot read could carry a placeholder unseen: fail closed
            dropping = true;
            String ce = head.headers().get(HttpHeaderNames.CONTENT_ENCODING);
            ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                    Decision.deny(Reason.UNSUPPORTED_ENCODING, BuiltinRules.CREDENTIALS),
                    "request Content-Encoding " + (ce.length() > 32 ? ce.substring(0, 32) + "..." : ce)
                            .replaceAll("[^\\x20-\\x7e]", "?")
                            + " cannot be searched for credential placeholders"));
            return;
        }
        if (resign != null && HttpUtil.getContentLength(head, -1L) > request.policy().limits().maxBufferedBodyBytes()) {
            dropping = true;
            ctx.fireChannelRead(new ExchangeControl.Refuse(request, signedTooLarge(), SIGNED_TOO_LARGE));
            resign = null;
            return;
        }
        if (HttpUtil.getContentLength(head, -1L) > request.policy().limits().maxBufferedBodyBytes()) {
            // too large to hold: streams on, watched for placeholders
            watch = new PlaceholderWatch(codingOf(coding), ctx.alloc());
            watched = request;
            ctx.fireChannelRead(request);
            return;
        }
        held = request;
        heldSnapshot = snapshot;
        heldBody = ctx.alloc().compositeBuffer(1024);
        if (HttpUtil.is100ContinueExpected(head)) {
            // RFC 9110 section 10.1.1: the body is needed before the head can go; ask for it.
            HttpUtil.set100ContinueExpected(head, false);
            ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    io.netty.handler.codec.http.HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER))
                    .addListener(io.netty.channel.ChannelFutureListener.CLOSE_ON_FAILURE);
        }
    }

    private void onHeldContent(ChannelHandlerContext ctx, HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        heldBody.addComponent(true, content.content().retain());
        content.release();
        long cap = held.policy().limits().maxBufferedBodyBytes();
        if (!last && heldBody.readableBytes() > cap) {
            // Too large to hold: it goes on as it streams, watched for placeholders (docs/credentials.md).
            ForwardRequest request = held;
            io.netty.buffer.ByteBuf body = heldBody;
            held = null;
            heldBody = null;
            heldSnapshot = null;
            if (resign != null) {
                body.release();
                dropping = true;
                ctx.fireChannelRead(new ExchangeControl.Refuse(request, signedTooLarge(), SIGNED_TOO_LARGE));
                resign = null;
                return;
            }
            watch = new PlaceholderWatch(codingOf(coding(request.request())), ctx.alloc());
            watched = request;
            PlaceholderWatch.Verdict verdict = watch.feed(body, false);
            body.release();
            if (verdict != PlaceholderWatch.Verdict.CLEAN) {
                // the head has not gone upstream: refuse it
                dropping = true;
                ctx.fireChannelRead(new ExchangeControl.Refuse(request, watchDenial(verdict, watch, request),
                        watchDetail(verdict, watch)));
                releaseWatch();
                return;
            }
            ctx.fireChannelRead(request);
            ctx.fireChannelRead(new DefaultHttpContent(watch.forwardable(false)));
            return;
        }
        if (!last) {
            return;
        }
        ForwardRequest request = held;
        io.netty.buffer.ByteBuf body = heldBody;
        held = null;
        heldBody = null;
        String coding = coding(request.request());
        byte[] original = io.netty.buffer.ByteBufUtil.getBytes(body);
        body.release();
        byte[] plain = coding.equals("identity") ? original
                : decode(coding, original, request.policy().limits().maxInspectedBodyBytes());
        if (plain == null) {
            // does not decode within the inspection cap: searched as it decodes, then on as it came
            heldSnapshot = null;
            PlaceholderWatch whole = new PlaceholderWatch(codingOf(coding), ctx.alloc());
            PlaceholderWatch.Verdict verdict = whole.feed(Unpooled.wrappedBuffer(original), true);
            whole.release(); // found() and problem() stay readable
            if (verdict != PlaceholderWatch.Verdict.CLEAN) {
                ctx.fireChannelRead(new ExchangeControl.Refuse(request, watchDenial(verdict, whole, request),
                        watchDetail(verdict, whole)));
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
                return;
            }
            if (resign != null && !signAgain(ctx, request, original)) {
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
                return;
            }
            ctx.fireChannelRead(request);
            ctx.fireChannelRead(new DefaultLastHttpContent(Unpooled.wrappedBuffer(original)));
            return;
        }
        String text = new String(plain, StandardCharsets.ISO_8859_1);
        CredentialRewriter.Result r = CredentialRewriter.decideBody(heldSnapshot.table(),
                request.audit().extensionOrNull(), intercepted, request.target().target().host(),
                request.target().target().port(), request.request().uri(),
                request.request().headers().get(HttpHeaderNames.CONTENT_TYPE), text, heldSnapshot.vault()::value);
        heldSnapshot = null;
        switch (r.outcome()) {
            case MISMATCH, UNAVAILABLE -> {
                Reason reason = r.outcome() == CredentialRewriter.Outcome.MISMATCH
                        ? Reason.CREDENTIAL_HOST_MISMATCH : Reason.CREDENTIAL_UNAVAILABLE;
                ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                        Decision.deny(reason, BuiltinRules.credential(r.credential())), r.detail()));
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
            default -> {
                byte[] bytes = r.outcome() != CredentialRewriter.Outcome.REWRITTEN ? original
                        : encode(coding, r.uri().getBytes(StandardCharsets.ISO_8859_1));
                if (r.outcome() == CredentialRewriter.Outcome.REWRITTEN) {
                    r.injected().forEach(request.audit()::credentialInjected);
                    request.request().headers().set(HttpHeaderNames.ACCEPT_ENCODING, "identity");
                }
                // held whole: sent with its length, recomputed when the swap changed it
                HttpUtil.setTransferEncodingChunked(request.request(), false);
                HttpUtil.setContentLength(request.request(), bytes.length);
                if (resign != null && !signAgain(ctx, request, bytes)) {
                    ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
                    return;
                }
                ctx.fireChannelRead(request);
                ctx.fireChannelRead(new DefaultLastHttpContent(Unpooled.wrappedBuffer(bytes)));
            }
        }
    }

    private static final String SIGNED_TOO_LARGE =
            "a SigV4 request Sluice signs again is held whole: its body is over limits.max_buffered_body";

    private Decision signedTooLarge() {
        return Decision.deny(Reason.BODY_TOO_LARGE, BuiltinRules.credential(resign.grant().credential().name()));
    }

    /**
     * Signs the request in progress again with the real key pair of {@link #resign} (AWS SDK signer,
     * {@link dev.sluice.proxy.credential.SigV4Signer}) over {@code body} as it goes upstream, after every other
     * header change; returns false after firing the refusal (503 {@code credential_unavailable} when the
     * value is not a key pair, 403 {@code sigv4_refused} when the declared payload hash is not the body's).
     */
    private boolean signAgain(ChannelHandlerContext ctx, ForwardRequest request, byte[] body) {
        var signed = resign;
        resign = null;
        String name = signed.grant().credential().name();
        HttpHeaders headers = request.request().headers();
        var pair = dev.sluice.proxy.credential.SigV4Signer.keyPair(
                credentials.forPolicy(request.policy()).vault().value(name));
        if (pair == null) {
            ctx.fireChannelRead(new ExchangeControl.Refuse(request, Decision.deny(Reason.CREDENTIAL_UNAVAILABLE,
                    BuiltinRules.credential(name)), "credential value is not an AWS key pair (docs/credentials.md)"));
            return false;
        }
        String declared = headers.get("x-amz-content-sha256", "").strip();
        if (declared.matches("[0-9a-fA-F]{64}")
                && !declared.equalsIgnoreCase(dev.sluice.proxy.credential.SigV4Signer.sha256Hex(body))) {
            ctx.fireChannelRead(new ExchangeControl.Refuse(request, Decision.deny(Reason.SIGV4_REFUSED,
                    BuiltinRules.credential(name)), "x-amz-content-sha256 does not match the request body"));
            return false;
        }
        headers.set(HttpHeaderNames.ACCEPT_ENCODING, "identity"); // before signing: it may be a signed header
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        String authority = headers.get(HttpHeaderNames.HOST, request.target().target().authority());
        dev.sluice.proxy.credential.SigV4Signer.Signature signature;
        try {
            signature = dev.sluice.proxy.credential.SigV4Signer.sign(pair, signed, request.request().method().name(),
                    authority, request.request().uri(), entries, body, resignUnsigned);
        } catch (RuntimeException e) {
            ctx.fireChannelRead(new ExchangeControl.Refuse(request, Decision.deny(Reason.SIGV4_REFUSED,
                    BuiltinRules.credential(name)), "the AWS signer refused the request: " + e.getClass().getSimpleName()));
            return false;
        }
        headers.remove(HttpHeaderNames.AUTHORIZATION);
        headers.remove("x-amz-security-token");
        signature.headers().forEach(headers::set);
        request.audit().credentialInjected(name);
        return true;
    }

    /**
     * A chunk of a body that streams on: searched with what came before; what cannot complete a
     * placeholder goes upstream, the rest waits for the next chunk. A placeholder (or a coded body that
     * stops decoding) ends the exchange with {@link ExchangeControl.Abort}: the forwarder closes the
     * upstream connection before the request's end, so the origin never gets a complete request, and
     * answers the refusal when no response has started; the rest of the body is dropped.
     */
    private void onWatchedContent(ChannelHandlerContext ctx, HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        PlaceholderWatch.Verdict verdict = watch.feed(content.content(), last);
        if (verdict != PlaceholderWatch.Verdict.CLEAN) {
            content.release();
            Decision denial = watchDenial(verdict, watch, watched);
            String detail = watchDetail(verdict, watch);
            releaseWatch();
            ctx.fireChannelRead(new ExchangeControl.Abort(denial, detail));
            if (last) {
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            } else {
                dropping = true;
            }
            return;
        }
        ByteBuf out = watch.forwardable(last);
        if (last) {
            DefaultLastHttpContent end = new DefaultLastHttpContent(out);
            end.trailingHeaders().set(((LastHttpContent) content).trailingHeaders());
            content.release();
            releaseWatch();
            ctx.fireChannelRead(end);
        } else {
            content.release();
            ctx.fireChannelRead(new DefaultHttpContent(out));
        }
    }

    private Decision watchDenial(PlaceholderWatch.Verdict verdict, PlaceholderWatch w, ForwardRequest request) {
        if (verdict == PlaceholderWatch.Verdict.UNREADABLE) {
            return Decision.deny(Reason.MALFORMED_REQUEST, BuiltinRules.CREDENTIALS);
        }
        String name = credentials.forPolicy(request.policy()).table()
                .lookup(w.found().toLowerCase(java.util.Locale.ROOT))
                .map(g -> g.credential().name()).orElse("unknown");
        return Decision.deny(Reason.CREDENTIAL_HOST_MISMATCH, BuiltinRules.credential(name));
    }

    private static String watchDetail(PlaceholderWatch.Verdict verdict, PlaceholderWatch w) {
        return verdict == PlaceholderWatch.Verdict.UNREADABLE
                ? "request body does not decode, so cannot be searched for credential placeholders: "
                        + w.problem()
                : "placeholder in a request body too large to hold (limits.max_buffered_body)";
    }

    private void releaseWatch() {
        if (watch != null) {
            watch.release();
        }
        watch = null;
        watched = null;
    }

    private static BodyDecoding.Coding codingOf(String coding) {
        return switch (coding) {
            case "gzip" -> BodyDecoding.Coding.GZIP;
            case "deflate" -> BodyDecoding.Coding.DEFLATE;
            default -> BodyDecoding.Coding.IDENTITY;
        };
    }

    /** The body's coding when this phase can read it ({@code identity}, {@code gzip}, {@code deflate}), else null. */
    private static String coding(io.netty.handler.codec.http.HttpRequest head) {
        String coding = head.headers().get(HttpHeaderNames.CONTENT_ENCODING);
        if (coding == null || coding.isBlank()) {
            return "identity";
        }
        String c = coding.trim().toLowerCase(java.util.Locale.ROOT);
        return switch (c) {
            case "identity" -> "identity";
            case "gzip", "x-gzip" -> "gzip";
            case "deflate" -> "deflate";
            default -> null;
        };
    }

    /** Undoes gzip (RFC 1952) or deflate (zlib, RFC 1950); null when it fails or exceeds {@code cap} bytes. */
    private static byte[] decode(String coding, byte[] data, long cap) {
        try (java.io.InputStream in = coding.equals("gzip")
                ? new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(data))
                : new java.util.zip.InflaterInputStream(new java.io.ByteArrayInputStream(data))) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
                if (out.size() > cap) {
                    return null;
                }
            }
            return out.toByteArray();
        } catch (java.io.IOException e) {
            return null;
        }
    }

    private static byte[] encode(String coding, byte[] data) {
        if (coding.equals("identity")) {
            return data;
        }
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (java.io.OutputStream z = coding.equals("gzip") ? new java.util.zip.GZIPOutputStream(out)
                : new java.util.zip.DeflaterOutputStream(out)) {
            z.write(data);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e); // in memory: cannot happen
        }
        return out.toByteArray();
    }

    private void releaseHeld() {
        releaseWatch();
        if (heldBody != null) {
            heldBody.release();
        }
        held = null;
        heldBody = null;
        heldSnapshot = null;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (held != null) {
            held.audit().error("downstream closed before the request body ended").emit();
        }
        releaseHeld();
        super.channelInactive(ctx);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        releaseHeld();
    }

    /**
     * The forms of each granted value to replace in responses ({@link Credentials.Snapshot#echoForms}), as
     * ISO-8859-1 views of their UTF-8 bytes, longest first; null when none.
     */
    private static Map<String, String> scrubTable(Credentials.Snapshot snapshot, String extension) {
        Map<String, String> out = new LinkedHashMap<>();
        snapshot.echoForms(extension).forEach((real, ph) -> out.put(latin1(real), latin1(ph)));
        return out.isEmpty() ? null : out;
    }

    /** Replaces real values in a response head: every field and the status line's reason phrase. */
    private void scrubHead(HttpResponse response) {
        scrubFields(response.headers());
        String reason = response.status().reasonPhrase();
        String scrubbedReason = replace(latin1(reason));
        if (!scrubbedReason.equals(latin1(reason))) {
            // the status line's reason phrase is the origin's free text too (RFC 9112 section 4)
            response.setStatus(new io.netty.handler.codec.http.HttpResponseStatus(response.status().code(),
                    new String(scrubbedReason.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8)));
        }
    }

    /** Replaces real values in every field of {@code headers} (a response head or its trailer section). */
    private void scrubFields(HttpHeaders headers) {
        if (headers.isEmpty()) {
            return;
        }
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        headers.clear();
        for (Map.Entry<String, String> e : entries) {
            headers.add(e.getKey(), new String(replace(latin1(e.getValue())).getBytes(StandardCharsets.ISO_8859_1),
                    StandardCharsets.UTF_8));
        }
    }

    /** The UTF-8 bytes of {@code s} as ISO-8859-1 characters, so that bodies are matched byte for byte. */
    private static String latin1(String s) {
        return new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }

    private String replace(String text) {
        for (Map.Entry<String, String> e : scrub.entrySet()) {
            if (text.contains(e.getKey())) {
                text = text.replace(e.getKey(), e.getValue());
            }
        }
        return text;
    }

    /** The response body bytes of {@code in}, decoded, as ISO-8859-1 characters; at {@code last} the decoder ends. */
    private String decodeResponse(ByteBuf in, boolean last)
            throws BodyDecoding.MalformedBodyException, dev.sluice.rules.redact.BodyTooLargeException {
        StringBuilder out = new StringBuilder(in.readableBytes() * 2);
        BodyDecoding.Sink sink = (b, off, len) -> out.append(new String(b, off, len, StandardCharsets.ISO_8859_1));
        byte[] bytes = io.netty.buffer.ByteBufUtil.getBytes(in);
        responseDecoder.feed(bytes, 0, bytes.length, sink);
        if (last) {
            responseDecoder.finish(sink);
            responseDecoder = null;
        }
        return out.toString();
    }

    /** The coding of a {@code Content-Encoding} value when this phase can undo it, else null. */
    private static BodyDecoding.Coding readableCoding(String contentEncoding) {
        try {
            return BodyDecoding.parse(contentEncoding);
        } catch (dev.sluice.rules.redact.UnsupportedContentEncodingException e) {
            return null;
        }
    }

    /**
     * Keeps in {@code Accept-Encoding} only the codings whose responses this phase can read and scrub
     * (gzip, deflate, identity): a request that got no credential injected keeps its compression, and
     * an origin that honours the field never answers {@code br} or {@code zstd}.
     */
    private static void narrowAcceptEncoding(HttpHeaders headers) {
        List<String> values = headers.getAll(HttpHeaderNames.ACCEPT_ENCODING);
        if (values.isEmpty()) {
            return;
        }
        List<String> kept = new ArrayList<>();
        for (String value : values) {
            for (String part : value.split(",")) {
                String coding = part.split(";", 2)[0].strip().toLowerCase(java.util.Locale.ROOT);
                if (coding.equals("gzip") || coding.equals("x-gzip") || coding.equals("deflate")
                        || coding.equals("identity")) {
                    kept.add(part.strip());
                }
            }
        }
        headers.set(HttpHeaderNames.ACCEPT_ENCODING, kept.isEmpty() ? "identity" : String.join(", ", kept));
    }

    /**
     * Refuses, before anything of it is relayed, a response whose body would be scrubbed but is coded
     * in a way this phase cannot read ({@code br}, {@code zstd}, stacked or unknown codings): 502
     * {@code response_not_scrubbable}, rule {@code credentials}; the body never reaches the sandbox.
     */
    private static final class CodingGuard implements ForwardRequest.ResponseScan {
        private final boolean bodyScrubbed;

        CodingGuard(boolean bodyScrubbed) {
            this.bodyScrubbed = bodyScrubbed;
        }

        @Override
        public void onHead(HttpResponse head) {
        }

        @Override
        public void onContent(ByteBuf content, boolean last, dev.sluice.proxy.audit.AuditEvent audit) {
        }

        @Override
        public ExchangeControl.Abort refuseHead(HttpResponse head) {
            int code = head.status().code();
            if (!bodyScrubbed || code == 204 || code == 304) {
                return null;
            }
            String coding = head.headers().get(HttpHeaderNames.CONTENT_ENCODING);
            if (readableCoding(coding) != null) {
                return null;
            }
            String shown = coding.length() > 32 ? coding.substring(0, 32) + "..." : coding;
            return new ExchangeControl.Abort(Decision.deny(Reason.RESPONSE_NOT_SCRUBBABLE, BuiltinRules.CREDENTIALS),
                    "response Content-Encoding " + shown.replaceAll("[^\\x20-\\x7e]", "?")
                            + " cannot be scrubbed of credentials; not relayed");
        }
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
        if (scrub == null) {
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof FullHttpResponse full) {
            // Sluice's own answers (which carry no secret) and an origin's head-only answer (an HTTP/2
            // HEADERS frame that ends its stream): no body to scrub, but the head is the origin's
            scrubHead(full);
            scrubFields(full.trailingHeaders());
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof LastHttpContent last && !scrubBody) {
            // a body left as it is (HEAD, HTTP/1.0) may still end with trailer fields
            scrubFields(last.trailingHeaders());
        }
        if (msg instanceof HttpResponse response) {
            HttpHeaders h = response.headers();
            scrubHead(response);
            int code = response.status().code();
            boolean informational = code < 200;
            scrubBody = !informational && scrubFraming && code != 204 && code != 304;
            carry = "";
            responseDecoder = null;
            if (scrubBody) {
                // CodingGuard refused every coding but these before the head got here
                BodyDecoding.Coding coding = readableCoding(h.get(HttpHeaderNames.CONTENT_ENCODING));
                if (coding != null && coding != BodyDecoding.Coding.IDENTITY) {
                    // decoded, scrubbed and sent identity-coded (always acceptable, RFC 9110 section 12.5.3)
                    responseDecoder = BodyDecoding.decoder(coding, Long.MAX_VALUE);
                    h.remove(HttpHeaderNames.CONTENT_ENCODING);
                    h.remove(HttpHeaderNames.ETAG); // a strong validator of the coded representation
                }
            }
            longest = scrub.keySet().stream().mapToInt(String::length).max().orElse(0);
            if (scrubBody && HttpUtil.isContentLengthSet(response)) {
                h.remove(HttpHeaderNames.CONTENT_LENGTH);
                if (!h.containsValue(HttpHeaderNames.CONNECTION, "close", true)) {
                    HttpUtil.setTransferEncodingChunked(response, true);
                }
            }
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof HttpContent content && scrubBody) {
            boolean last = content instanceof LastHttpContent;
            ByteBuf in = content.content();
            String text;
            try {
                text = carry + (responseDecoder == null ? in.toString(StandardCharsets.ISO_8859_1)
                        : decodeResponse(in, last));
            } catch (BodyDecoding.MalformedBodyException | dev.sluice.rules.redact.BodyTooLargeException e) {
                // cannot be read, so cannot be scrubbed: the client must not take a cut body for a whole one
                content.release();
                scrubBody = false;
                responseDecoder = null;
                promise.setFailure(e);
                ctx.close();
                return;
            }
            HttpHeaders trailers = last ? ((LastHttpContent) content).trailingHeaders() : null;
            content.release();
            text = replace(text);
            String out;
            if (last) {
                out = text;
                carry = "";
                scrubBody = false;
            } else {
                int keep = Math.min(text.length(), Math.max(0, longest - 1));
                out = text.substring(0, text.length() - keep);
                carry = text.substring(text.length() - keep);
            }
            ByteBuf bytes = Unpooled.wrappedBuffer(out.getBytes(StandardCharsets.ISO_8859_1));
            if (last) {
                DefaultLastHttpContent end = new DefaultLastHttpContent(bytes);
                if (trailers != null) {
                    end.trailingHeaders().set(trailers);
                    scrubFields(end.trailingHeaders());
                }
                ctx.write(end, promise);
            } else {
                ctx.write(new DefaultHttpContent(bytes), promise);
            }
            return;
        }
        ctx.write(msg, promise);
    }
}
