package dev.sluice.proxy.forward;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.policy.RedactionSettings;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameEncoder;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtension;
import java.io.ByteArrayOutputStream;

/**
 * {@code websocket: inspect} on an intercepted host: the frames of both legs are parsed with Netty's
 * RFC 6455 codecs ({@link WebSocket13FrameDecoder} / {@link WebSocket13FrameEncoder}; frames from the
 * client must be masked, frames to the origin are masked anew). permessage-deflate (RFC 7692) is
 * negotiated on each leg on its own ({@link WebSocketDeflate}) and undone with Netty's extension
 * decoders before anything is scanned, redone by its encoders after; no other extension is.
 *
 * <p>Client → origin: a text message (all its fragments, RFC 6455 section 5.4) is reassembled up to
 * {@code limits.max_websocket_message} bytes and put whole through the policy's redactor (the same
 * {@link StreamingRedactor} request bodies use: JSON when it starts with {@code {} or {@code [}, else
 * plain text) and sent on as one frame; {@code redaction.action: block} with a finding closes both legs
 * with 1008. A binary message is scanned in report mode and sent on unchanged, or closes both legs with
 * 1008 when it holds a finding and {@code redaction.binary} is {@code block}. Over the size limit, both
 * legs close with 1009. Ping, pong and close frames are relayed as they are.
 *
 * <p>Origin → client: frames are relayed as they come; text is scanned in report mode (counted as
 * {@code response.<detector-id>}, as for SSE answers). Messages are counted per direction in the record
 * ({@code websocket.messages_sent} / {@code _received}), with the redaction counts.
 */
final class WebSocketInspection {

    /** Pipeline names of the frame codecs. */
    static final String ENCODER = "ws-encoder";
    static final String DECODER = "ws-decoder";
    /** Pipeline names of a leg's permessage-deflate decoder and encoder. */
    static final String INFLATE = "ws-inflate";
    static final String DEFLATE = "ws-deflate";

    private final AuditEvent audit;
    private final RedactionSettings settings;
    private final int maxMessage;

    // client → origin message being reassembled
    private ByteArrayOutputStream clientMessage;
    private boolean clientText;
    // origin → client text message being scanned
    private StreamingRedactor originScan;
    private boolean originInMessage;

    private final WebSocketExtension clientDeflate;
    private final WebSocketExtension originDeflate;

    /**
     * @param settings the policy's redaction settings, or null (messages are then only counted)
     * @param maxMessage {@code limits.max_websocket_message}, in bytes
     * @param clientDeflate permessage-deflate negotiated with the client, or null
     * @param originDeflate permessage-deflate negotiated with the origin, or null
     */
    WebSocketInspection(AuditEvent audit, RedactionSettings settings, int maxMessage, WebSocketExtension clientDeflate,
                        WebSocketExtension originDeflate) {
        this.audit = audit;
        this.settings = settings;
        this.maxMessage = maxMessage;
        this.clientDeflate = clientDeflate;
        this.originDeflate = originDeflate;
    }

    /**
     * Adds the frame codecs (and a leg's permessage-deflate encoder and decoder, RFC 7692) last in both
     * pipelines; the relay handler goes after them.
     */
    void installCodecs(Channel downstream, Channel upstream) {
        add(downstream.pipeline(), new WebSocket13FrameEncoder(false), decoder(true, clientDeflate != null),
                clientDeflate);
        add(upstream.pipeline(), new WebSocket13FrameEncoder(true), decoder(false, originDeflate != null),
                originDeflate);
    }

    private WebSocket13FrameDecoder decoder(boolean fromClient, boolean extensions) {
        return new WebSocket13FrameDecoder(WebSocketDecoderConfig.newBuilder()
                .expectMaskedFrames(fromClient)
                .allowMaskMismatch(false)
                .allowExtensions(extensions)
                .maxFramePayloadLength(maxMessage)
                .closeOnProtocolViolation(false)
                .build());
    }

    private static void add(ChannelPipeline p, WebSocket13FrameEncoder encoder, WebSocket13FrameDecoder decoder,
                            WebSocketExtension deflate) {
        // The decoder sends no close frame itself: the relay closes both legs with its status, in order.
        p.addLast(ENCODER, encoder);
        p.addLast(DECODER, decoder);
        if (deflate != null) {
            // Inbound: frame decoder, then inflate; outbound: deflate, then the frame encoder.
            p.addLast(INFLATE, deflate.newExtensionDecoder());
            p.addLast(DEFLATE, deflate.newExtensionEncoder());
        }
    }

    /** What to do with a frame: pass it (possibly another one), or end with a close status. */
    record Outcome(WebSocketFrame send, WebSocketCloseStatus close, String error) {
        static Outcome pass(WebSocketFrame frame) {
            return new Outcome(frame, null, null);
        }

        static Outcome hold() {
            return new Outcome(null, null, null);
        }

        static Outcome fail(WebSocketCloseStatus status, String error) {
            return new Outcome(null, status, error);
        }
    }

    /** A frame the client sent; takes ownership of {@code frame}. */
    Outcome fromClient(WebSocketFrame frame) {
        boolean data = frame instanceof TextWebSocketFrame || frame instanceof BinaryWebSocketFrame;
        if (!data && !(frame instanceof ContinuationWebSocketFrame)) {
            return Outcome.pass(frame);
        }
        try {
            if (data) {
                if (clientMessage != null) {
                    return Outcome.fail(WebSocketCloseStatus.PROTOCOL_ERROR, "websocket: a new message inside a fragmented one");
                }
                clientMessage = new ByteArrayOutputStream();
                clientText = frame instanceof TextWebSocketFrame;
            } else if (clientMessage == null) {
                return Outcome.fail(WebSocketCloseStatus.PROTOCOL_ERROR, "websocket: a continuation with no message");
            }
            ByteBuf content = frame.content();
            if ((long) clientMessage.size() + content.readableBytes() > maxMessage) {
                clientMessage = null;
                return Outcome.fail(WebSocketCloseStatus.MESSAGE_TOO_BIG,
                        "websocket message over limits.max_websocket_message (" + maxMessage + " bytes)");
            }
            clientMessage.write(ByteBufUtil.getBytes(content), 0, content.readableBytes());
            if (!frame.isFinalFragment()) {
                return Outcome.hold();
            }
            byte[] message = clientMessage.toByteArray();
            clientMessage = null;
            audit.addWebsocketMessageSent();
            // Credentials are never injected into messages: a placeholder in one (raw or encoded) is refused
            // like a placeholder sent where it does not belong, and the message never reaches the origin.
            if (dev.sluice.rules.credential.CredentialRewriter.find(
                    new String(message, java.nio.charset.StandardCharsets.ISO_8859_1)) != null) {
                return Outcome.fail(WebSocketCloseStatus.POLICY_VIOLATION,
                        "credential_host_mismatch: a credential placeholder in a websocket message");
            }
            return clientText ? text(message) : binary(message);
        } finally {
            frame.release();
        }
    }

    private Outcome text(byte[] message) {
        if (settings == null) {
            return Outcome.pass(new TextWebSocketFrame(Unpooled.wrappedBuffer(message)));
        }
        StreamingRedactor redactor = settings.detectors().newRedactor(format(message), settings.action(), maxMessage);
        ByteArrayOutputStream out = new ByteArrayOutputStream(message.length);
        try {
            out.writeBytes(redactor.feed(message));
        } catch (BodyTooLargeException e) {
            return Outcome.fail(WebSocketCloseStatus.MESSAGE_TOO_BIG,
                    "websocket message over limits.max_websocket_message (" + maxMessage + " bytes)");
        }
        out.writeBytes(redactor.finish());
        redactor.findings().forEach(audit::addRedactions);
        if (redactor.blocked()) {
            return Outcome.fail(WebSocketCloseStatus.POLICY_VIOLATION, "credential_detected in a websocket message");
        }
        return Outcome.pass(new TextWebSocketFrame(Unpooled.wrappedBuffer(out.toByteArray())));
    }

    private Outcome binary(byte[] message) {
        if (settings != null) {
            StreamingRedactor scan = settings.detectors().newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT,
                    Long.MAX_VALUE);
            try {
                scan.feed(message);
            } catch (BodyTooLargeException e) {
                throw new IllegalStateException(e);
            }
            scan.finish();
            scan.findings().forEach(audit::addRedactions);
            if (scan.hasFindings() && settings.binary() == RedactionAction.BLOCK) {
                return Outcome.fail(WebSocketCloseStatus.POLICY_VIOLATION,
                        "credential_detected in a binary websocket message (redaction.binary: block)");
            }
        }
        return Outcome.pass(new BinaryWebSocketFrame(Unpooled.wrappedBuffer(message)));
    }

    /** A frame the origin sent; passed on as it is (ownership goes with it), text scanned in report mode. */
    Outcome fromOrigin(WebSocketFrame frame) {
        boolean start = frame instanceof TextWebSocketFrame || frame instanceof BinaryWebSocketFrame;
        if (!start && !(frame instanceof ContinuationWebSocketFrame)) {
            return Outcome.pass(frame);
        }
        if (start) {
            originInMessage = true;
            originScan = frame instanceof TextWebSocketFrame && settings != null
                    ? settings.detectors().newRedactor(format(frame.content()), RedactionAction.REPORT, Long.MAX_VALUE)
                    : null;
        }
        if (originScan != null) {
            try {
                originScan.feed(frame.content().nioBuffer());
            } catch (BodyTooLargeException e) {
                originScan = null;
            }
        }
        if (frame.isFinalFragment() && originInMessage) {
            originInMessage = false;
            audit.addWebsocketMessageReceived();
            if (originScan != null) {
                originScan.finish();
                originScan.findings().forEach((id, n) -> audit.addRedactions("response." + id, n));
                originScan = null;
            }
        }
        return Outcome.pass(frame);
    }

    private static BodyFormat format(byte[] message) {
        return format(Unpooled.wrappedBuffer(message));
    }

    private static BodyFormat format(ByteBuf content) {
        for (int i = content.readerIndex(); i < content.writerIndex(); i++) {
            byte b = content.getByte(i);
            if (b == ' ' || b == '\t' || b == '\r' || b == '\n') {
                continue;
            }
            return b == '{' || b == '[' ? BodyFormat.JSON : BodyFormat.PLAIN;
        }
        return BodyFormat.PLAIN;
    }
}
