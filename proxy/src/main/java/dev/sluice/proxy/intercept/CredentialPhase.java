package dev.sluice.proxy.intercept;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.proxy.credential.Credentials;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.credential.CredentialRewriter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
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
 * any other placeholder refused; it then goes on with a recomputed {@code Content-Length}.
 *
 * <p>Responses (intercepted legs): every real value of the extension's credentials — raw, JSON-escaped
 * ({@code \/}), percent-encoded and base64 — is replaced by its placeholder in the response head and
 * body as they stream (an occurrence split across chunks included), so an origin that echoes a key
 * never hands it to the sandbox. A body whose length may change loses its {@code Content-Length} and
 * goes chunked (or is delimited by the close when the connection ends with it); the bodies of HTTP/1.0
 * exchanges and HEAD responses are not rewritten (their heads are). A request that carries an injected
 * credential asks for {@code Accept-Encoding: identity}, so that the response body can be read.
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

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest request) {
        Credentials.Snapshot snapshot = credentials.forPolicy(request.policy());
        HttpHeaders headers = request.request().headers();
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        String extension = request.audit().extensionOrNull();
        // HTTP/1.0 clients cannot take a chunked body, and a HEAD response has none: their heads only
        scrubFraming = request.request().protocolVersion().equals(HttpVersion.HTTP_1_1)
                && !request.request().method().equals(io.netty.handler.codec.http.HttpMethod.HEAD);
        scrub = intercepted ? scrubTable(snapshot, extension) : null;
        CredentialRewriter.Result r = CredentialRewriter.decide(snapshot.table(), extension, intercepted,
                request.target().target().host(), request.target().target().port(), request.request().uri(), entries,
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
     * up to {@code limits.max_buffered_body}; a larger body goes on as it streams, unscanned.
     */
    private void passOrHold(ChannelHandlerContext ctx, ForwardRequest request, Credentials.Snapshot snapshot,
                            String extension) {
        io.netty.handler.codec.http.HttpRequest head = request.request();
        boolean hasBody = HttpUtil.isTransferEncodingChunked(head) || HttpUtil.getContentLength(head, 0L) > 0;
        if (!hasBody || coding(head) == null || head instanceof io.netty.handler.codec.http.FullHttpRequest
                || snapshot.table().grants(extension).isEmpty()) {
            ctx.fireChannelRead(request);
            return;
        }
        if (HttpUtil.getContentLength(head, -1L) > request.policy().limits().maxBufferedBodyBytes()) {
            ctx.fireChannelRead(request); // too large to hold: streams, unscanned
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
            // Too large to hold: it goes on as it streams, unscanned (docs/credentials.md).
            ForwardRequest request = held;
            io.netty.buffer.ByteBuf body = heldBody;
            held = null;
            heldBody = null;
            ctx.fireChannelRead(request);
            ctx.fireChannelRead(new DefaultHttpContent(body));
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
            // does not decode within the inspection cap: it goes on as it came, unscanned
            heldSnapshot = null;
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
                ctx.fireChannelRead(request);
                ctx.fireChannelRead(new DefaultLastHttpContent(Unpooled.wrappedBuffer(bytes)));
            }
        }
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

    /** The forms of each granted value to replace in responses, longest first; null when none. */
    private static Map<String, String> scrubTable(Credentials.Snapshot snapshot, String extension) {
        Map<String, String> forms = new LinkedHashMap<>();
        for (var grant : snapshot.table().grants(extension).values()) {
            String real = snapshot.vault().value(grant.credential().name());
            if (real == null) {
                continue;
            }
            String ph = grant.placeholder();
            forms.put(latin1(real), ph);
            forms.put(latin1(real.replace("/", "\\/")), ph);
            forms.put(latin1(URLEncoder.encode(real, StandardCharsets.UTF_8)), ph);
            forms.put(Base64.getEncoder().withoutPadding().encodeToString(real.getBytes(StandardCharsets.UTF_8)),
                    Base64.getEncoder().withoutPadding().encodeToString(ph.getBytes(StandardCharsets.UTF_8)));
            forms.put(Base64.getUrlEncoder().withoutPadding().encodeToString(real.getBytes(StandardCharsets.UTF_8)),
                    Base64.getUrlEncoder().withoutPadding().encodeToString(ph.getBytes(StandardCharsets.UTF_8)));
        }
        if (forms.isEmpty()) {
            return null;
        }
        List<Map.Entry<String, String>> sorted = new ArrayList<>(forms.entrySet());
        sorted.sort((a, b) -> b.getKey().length() - a.getKey().length());
        Map<String, String> out = new LinkedHashMap<>();
        sorted.forEach(e -> out.put(e.getKey(), e.getValue()));
        return out;
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

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
        if (scrub == null || msg instanceof FullHttpResponse) {
            // Sluice's own answers carry no secret
            ctx.write(msg, promise);
            return;
        }
        if (msg instanceof HttpResponse response) {
            HttpHeaders h = response.headers();
            List<Map.Entry<String, String>> entries = new ArrayList<>();
            h.forEach(entries::add);
            h.clear();
            for (Map.Entry<String, String> e : entries) {
                h.add(e.getKey(), new String(replace(latin1(e.getValue())).getBytes(StandardCharsets.ISO_8859_1),
                        StandardCharsets.UTF_8));
            }
            int code = response.status().code();
            boolean informational = code < 200;
            scrubBody = !informational && scrubFraming && code != 204 && code != 304;
            carry = "";
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
            String text = carry + in.toString(StandardCharsets.ISO_8859_1);
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
