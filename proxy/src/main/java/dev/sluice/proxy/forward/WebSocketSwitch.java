package dev.sluice.proxy.forward;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.http.WebSocketUpgrade;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import org.jspecify.annotations.Nullable;

/**
 * The switch from an HTTP exchange to a WebSocket connection (RFC 6455 section 4.2.2), once the origin
 * answered {@code 101} with the right {@code Sec-WebSocket-Accept}: the 101 (its {@code Upgrade},
 * {@code Connection} and {@code Sec-WebSocket-*} fields only) goes to the client, then both connections
 * leave HTTP and become a {@link WebSocketRelay}; the exchange's record becomes the upgraded
 * connection's, written when it ends. The {@link HttpForwarder} has let go of the exchange and the
 * upstream connection before; from here the relay owns both channels.
 */
final class WebSocketSwitch {

    private WebSocketSwitch() {
    }

    /**
     * @param ctx the forwarder's context on the downstream channel (the forwarder leaves that pipeline)
     * @param request the handshake's exchange
     * @param response the origin's 101, released here
     * @param up the upstream channel
     * @param clientExtensions the client's {@code Sec-WebSocket-Extensions} of an inspected handshake, or null
     * @param originDeflate the permessage-deflate the origin accepted (inspect mode), or null
     */
    static void start(ChannelHandlerContext ctx, ForwardRequest request, HttpResponse response, Channel up,
                      @Nullable String clientExtensions,
                      io.netty.handler.codec.http.websocketx.extensions.@Nullable WebSocketClientExtension originDeflate) {
        AuditEvent audit = request.audit();
        audit.statusCode(101).websocketMode(request.websocket());
        HttpResponse answer = new io.netty.handler.codec.http.DefaultHttpResponse(HttpVersion.HTTP_1_1,
                io.netty.handler.codec.http.HttpResponseStatus.SWITCHING_PROTOCOLS);
        answer.headers().set(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET);
        answer.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
        WebSocketUpgrade.copyWebSocketFields(response.headers(), answer.headers());
        ReferenceCountUtil.release(response);
        boolean inspect = "inspect".equals(request.websocket());
        int maxMessage = request.policy().limits().maxWebsocketMessageBytes();
        io.netty.handler.codec.http.websocketx.extensions.WebSocketServerExtension clientDeflate = null;
        if (inspect) {
            answer.headers().remove(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS);
            clientDeflate = WebSocketDeflate.acceptClientOffer(clientExtensions, maxMessage);
            if (clientDeflate != null) {
                answer.headers().set(HttpHeaderNames.SEC_WEBSOCKET_EXTENSIONS,
                        WebSocketDeflate.render(clientDeflate.newReponseData()));
            }
        }
        Channel down = ctx.channel();
        ctx.writeAndFlush(answer).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        WebSocketInspection inspection = inspect
                ? new WebSocketInspection(audit, request.policy().redaction(), maxMessage, clientDeflate, originDeflate)
                : null;
        WebSocketRelay.start(audit, down, up, inspection);
        // Upstream: the response relay and the HTTP codec go; what the codec still holds reaches the relay.
        ChannelPipeline upPipeline = up.pipeline();
        for (String name : new String[] {"response", "codec"}) {
            if (upPipeline.get(name) != null) {
                upPipeline.remove(name);
            }
        }
        ChannelPipeline downPipeline = down.pipeline();
        for (String name : new String[] {HttpPipeline.HEADER_DEADLINE, HttpPipeline.ENCODER, HttpPipeline.REQUEST,
                HttpPipeline.REDACT, HttpPipeline.CREDENTIALS, HttpPipeline.LLM,
                HttpPipeline.RED_FLAGS, HttpPipeline.CAPTURE, HttpPipeline.CONNECT, HttpPipeline.DECODER}) {
            if (downPipeline.get(name) != null) {
                downPipeline.remove(name);
            }
        }
        downPipeline.remove(ctx.handler());
        WebSocketRelay.read(down, up);
    }
}
