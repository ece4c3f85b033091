package dev.sluice.proxy.admin;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.Policy;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * The admin endpoints, on the admin listener only (never on a proxy listener):
 * <table>
 *   <caption>Admin endpoints</caption>
 *   <tr><td>GET /metrics</td><td>200, Prometheus text exposition format 0.0.4</td></tr>
 *   <tr><td>GET /healthz</td><td>200 {@code ok} while the process serves</td></tr>
 *   <tr><td>GET /readyz</td><td>200 {@code ready} once the policy loaded, the listeners are bound and
 *       the audit log can write; 503 with the reason otherwise</td></tr>
 *   <tr><td>GET /policy</td><td>200 JSON: source, sha256, loaded_at (RFC 3339), mode, extensions</td></tr>
 * </table>
 * Any other path is 404, any other method 405. A request-target in absolute-form (someone using the
 * admin port as a proxy) is 404 too: the admin listener forwards nothing.
 */
final class AdminHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final SluiceMetrics metrics;
    private final PolicyHolder policies;
    private final Supplier<String> notReadyReason;

    /**
     * @param notReadyReason returns null when ready, or a one-line reason why not
     */
    AdminHandler(SluiceMetrics metrics, PolicyHolder policies, Supplier<String> notReadyReason) {
        this.metrics = metrics;
        this.policies = policies;
        this.notReadyReason = notReadyReason;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) throws Exception {
        FullHttpResponse response;
        String path = request.uri();
        int query = path.indexOf('?');
        if (query >= 0) {
            path = path.substring(0, query);
        }
        if (!request.decoderResult().isSuccess()) {
            response = text(ctx, HttpResponseStatus.BAD_REQUEST, "bad request\n");
        } else if (!HttpMethod.GET.equals(request.method()) && !HttpMethod.HEAD.equals(request.method())) {
            response = text(ctx, HttpResponseStatus.METHOD_NOT_ALLOWED, "method not allowed\n");
            response.headers().set(HttpHeaderNames.ALLOW, "GET, HEAD");
        } else {
            switch (path) {
                case "/metrics" -> {
                    response = text(ctx, HttpResponseStatus.OK, metrics.scrape());
                    response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
                }
                case "/healthz" -> response = text(ctx, HttpResponseStatus.OK, "ok\n");
                case "/readyz" -> {
                    String why = notReadyReason.get();
                    response = why == null ? text(ctx, HttpResponseStatus.OK, "ready\n")
                            : text(ctx, HttpResponseStatus.SERVICE_UNAVAILABLE, "not ready: " + why + "\n");
                }
                case "/policy" -> {
                    Policy policy = policies.current();
                    ObjectNode body = JSON.createObjectNode()
                            .put("source", policy.source())
                            .put("sha256", policy.sha256Hex())
                            .put("loaded_at", policies.loadedAt().toString())
                            .put("mode", policy.mode().name().toLowerCase(java.util.Locale.ROOT))
                            .put("extensions", policy.extensions().size());
                    response = text(ctx, HttpResponseStatus.OK, JSON.writeValueAsString(body) + "\n");
                    response.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
                }
                default -> response = text(ctx, HttpResponseStatus.NOT_FOUND, "not found\n");
            }
        }
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        if (HttpMethod.HEAD.equals(request.method())) {
            response.content().clear();
        }
        if (keepAlive) {
            ctx.writeAndFlush(response);
        } else {
            response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private static FullHttpResponse text(ChannelHandlerContext ctx, HttpResponseStatus status, String body) {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ByteBuf content = ctx.alloc().buffer(bytes.length).writeBytes(bytes);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length)
                .set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_STORE);
        return response;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }
}
