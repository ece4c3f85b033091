package dev.sluice.proxy.forward;

import io.netty.handler.codec.http.websocketx.extensions.WebSocketClientExtension;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionData;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionFilterProvider;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketExtensionUtil;
import io.netty.handler.codec.http.websocketx.extensions.WebSocketServerExtension;
import io.netty.handler.codec.http.websocketx.extensions.compression.PerMessageDeflateClientExtensionHandshaker;
import io.netty.handler.codec.http.websocketx.extensions.compression.PerMessageDeflateServerExtensionHandshaker;
import java.util.List;
import java.util.Map;

/**
 * permessage-deflate (RFC 7692) for {@code websocket: inspect}, negotiated on each leg on its own with
 * Netty's handshakers: toward the client Sluice is the server (it accepts the client's offer when Netty's
 * {@link PerMessageDeflateServerExtensionHandshaker} does), toward the origin it is a client (it offers
 * plain {@code permessage-deflate} when the client offered it, and accepts what Netty's
 * {@link PerMessageDeflateClientExtensionHandshaker} accepts). Inflating is capped at
 * {@code limits.max_websocket_message} bytes per frame (Netty's {@code maxAllocation}), so a small
 * compressed frame cannot expand without bound.
 */
final class WebSocketDeflate {

    private static final String NAME = "permessage-deflate";
    /** zlib compression level for what Sluice compresses. */
    private static final int LEVEL = 6;
    /** The largest LZ77 window (RFC 7692 section 7.1.2), in bits. */
    private static final int WINDOW_BITS = 15;

    private WebSocketDeflate() {
    }

    /** Answers whether a {@code Sec-WebSocket-Extensions} value offers permessage-deflate. */
    static boolean offered(String extensions) {
        return extensions != null && WebSocketExtensionUtil.extractExtensions(extensions).stream()
                .anyMatch(e -> NAME.equals(e.name()));
    }

    /** The offer Sluice makes to the origin: {@code permessage-deflate} without parameters. */
    static String upstreamOffer() {
        return NAME;
    }

    /**
     * Accepts the first of the client's permessage-deflate offers that Netty's server handshaker takes.
     *
     * @return the extension for the client's leg (its {@link WebSocketServerExtension#newReponseData()}
     *     goes into the 101), or null when none is acceptable (the leg stays uncompressed)
     */
    static WebSocketServerExtension acceptClientOffer(String extensions, int maxAllocation) {
        if (extensions == null) {
            return null;
        }
        PerMessageDeflateServerExtensionHandshaker handshaker = new PerMessageDeflateServerExtensionHandshaker(LEVEL,
                true, WINDOW_BITS, true, false, WebSocketExtensionFilterProvider.DEFAULT, maxAllocation);
        for (WebSocketExtensionData offer : WebSocketExtensionUtil.extractExtensions(extensions)) {
            WebSocketServerExtension accepted = handshaker.handshakeExtension(offer);
            if (accepted != null) {
                return accepted;
            }
        }
        return null;
    }

    /**
     * Checks the origin's answer to {@link #upstreamOffer()}.
     *
     * @return the extension for the origin's leg, or null when the answer is not one permessage-deflate
     *     Netty's client handshaker accepts (the caller answers 502)
     */
    static WebSocketClientExtension acceptOriginAnswer(String extensions, int maxAllocation) {
        List<WebSocketExtensionData> answers = WebSocketExtensionUtil.extractExtensions(extensions);
        if (answers.size() != 1) {
            return null;
        }
        return new PerMessageDeflateClientExtensionHandshaker(LEVEL, true, WINDOW_BITS, true, false,
                WebSocketExtensionFilterProvider.DEFAULT, maxAllocation).handshakeExtension(answers.get(0));
    }

    /** Renders extension data as a {@code Sec-WebSocket-Extensions} value (RFC 6455 section 9.1). */
    static String render(WebSocketExtensionData data) {
        StringBuilder out = new StringBuilder(data.name());
        for (Map.Entry<String, String> p : data.parameters().entrySet()) {
            out.append("; ").append(p.getKey());
            if (p.getValue() != null) {
                out.append('=').append(p.getValue());
            }
        }
        return out.toString();
    }
}
