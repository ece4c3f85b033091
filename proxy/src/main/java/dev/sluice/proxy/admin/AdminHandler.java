package dev.sluice.proxy.admin;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sluice.proxy.approval.Approvals;
import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.ApprovalSettings;
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
 *   <tr><td>GET /approvals</td><td>200 JSON {@code {"approvals":[{"id","extension","host","port","method",
 *       "path","scopes","asked_at","expires_at"}]}}: the requests held for {@code approvals.backend: admin}</td></tr>
 *   <tr><td>POST /approvals/ID/allow</td><td>body {@code {"scope":"once","by":"alice"}} (both optional:
 *       {@code once}, {@code admin}); 200 {@code {"id","decision":"allow","scope"}}, 404 when nothing waits
 *       under ID, 400 when the scope is not offered</td></tr>
 *   <tr><td>POST /approvals/ID/deny</td><td>body {@code {"by":"alice"}} (optional); 200 or 404</td></tr>
 * </table>
 * The {@code /approvals} endpoints require {@code Authorization: Bearer <token>} ({@link AdminToken};
 * 401 with {@code WWW-Authenticate: Bearer} otherwise) and answer 404 unless {@code approvals.backend} is
 * {@code admin}. Any other path is 404, any other method 405. A request-target in absolute-form (someone using the
 * admin port as a proxy) is 404 too: the admin listener forwards nothing.
 */
final class AdminHandler extends SimpleChannelInboundHandler<FullHttpRequest> {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final SluiceMetrics metrics;
    private final PolicyHolder policies;
    private final Supplier<String> notReadyReason;
    private final Approvals approvals;
    private final AdminToken token;

    /**
     * @param notReadyReason returns null when ready, or a one-line reason why not
     * @param approvals the held requests, or null when this Sluice has none
     * @param token what the approval endpoints require, or null (then they are 404)
     */
    AdminHandler(SluiceMetrics metrics, PolicyHolder policies, Supplier<String> notReadyReason, Approvals approvals,
                 AdminToken token) {
        this.metrics = metrics;
        this.policies = policies;
        this.notReadyReason = notReadyReason;
        this.approvals = approvals;
        this.token = token;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) throws Exception {
        FullHttpResponse response;
        String path = request.uri();
        int query = path.indexOf('?');
        if (query >= 0) {
            path = path.substring(0, query);
        }
        if (request.decoderResult().isSuccess() && (path.equals("/approvals") || path.startsWith("/approvals/"))) {
            approvals(ctx, request, path);
            return;
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
        send(ctx, request, HttpUtil.isKeepAlive(request), response);
    }

    /** The approval endpoints: authenticated, then list, allow or deny. */
    private void approvals(ChannelHandlerContext ctx, FullHttpRequest request, String path) throws Exception {
        boolean keepAlive = HttpUtil.isKeepAlive(request);
        Policy policy = policies.current();
        if (token == null || approvals == null || policy.approvals() == null
                || policy.approvals().backend() != ApprovalSettings.Backend.ADMIN) {
            send(ctx, request, keepAlive, text(ctx, HttpResponseStatus.NOT_FOUND,
                    "not found: approvals.backend is not admin\n"));
            return;
        }
        if (!token.accepts(request.headers().get(HttpHeaderNames.AUTHORIZATION))) {
            FullHttpResponse denied = text(ctx, HttpResponseStatus.UNAUTHORIZED,
                    "unauthorized: send Authorization: Bearer <the token in the data dir's " + AdminToken.FILE_NAME + ">\n");
            denied.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"sluice-admin\"");
            send(ctx, request, keepAlive, denied);
            return;
        }
        if (path.equals("/approvals")) {
            if (!HttpMethod.GET.equals(request.method())) {
                FullHttpResponse r = text(ctx, HttpResponseStatus.METHOD_NOT_ALLOWED, "method not allowed\n");
                r.headers().set(HttpHeaderNames.ALLOW, "GET");
                send(ctx, request, keepAlive, r);
                return;
            }
            ObjectNode body = JSON.createObjectNode();
            var list = body.putArray("approvals");
            for (Approvals.Question q : approvals.pending()) {
                ObjectNode o = list.addObject().put("id", q.id()).put("extension", q.extension()).put("host", q.host())
                        .put("port", q.port()).put("method", q.method()).put("path", q.path());
                var scopes = o.putArray("scopes");
                q.scopes().stream().sorted().forEach(scopes::add);
                o.put("asked_at", q.askedAt().toString()).put("expires_at", q.expiresAt().toString());
            }
            send(ctx, request, keepAlive, json(ctx, HttpResponseStatus.OK, body));
            return;
        }
        String[] parts = path.substring("/approvals/".length()).split("/", -1);
        if (parts.length != 2 || parts[0].isEmpty() || !(parts[1].equals("allow") || parts[1].equals("deny"))) {
            send(ctx, request, keepAlive, text(ctx, HttpResponseStatus.NOT_FOUND, "not found\n"));
            return;
        }
        if (!HttpMethod.POST.equals(request.method())) {
            FullHttpResponse r = text(ctx, HttpResponseStatus.METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers().set(HttpHeaderNames.ALLOW, "POST");
            send(ctx, request, keepAlive, r);
            return;
        }
        String id = parts[0];
        boolean allow = parts[1].equals("allow");
        com.fasterxml.jackson.databind.JsonNode answer;
        try {
            String text = request.content().toString(StandardCharsets.UTF_8);
            answer = text.isBlank() ? JSON.createObjectNode() : JSON.readTree(text);
        } catch (java.io.IOException e) {
            answer = null;
        }
        if (answer == null || !answer.isObject() || (answer.has("scope") && !answer.get("scope").isTextual())
                || (answer.has("by") && !answer.get("by").isTextual())) {
            send(ctx, request, keepAlive, text(ctx, HttpResponseStatus.BAD_REQUEST,
                    "bad request: expected a JSON object {\"scope\": \"once|session|always\", \"by\": \"<who>\"}\n"));
            return;
        }
        String scope = answer.path("scope").asText("once");
        String by = answer.path("by").asText("admin");
        approvals.answer(id, allow, scope, by).thenAccept(result -> ctx.executor().execute(() -> {
            FullHttpResponse r = switch (result) {
                case ANSWERED -> {
                    ObjectNode body = JSON.createObjectNode().put("id", id).put("decision", allow ? "allow" : "deny");
                    if (allow) {
                        body.put("scope", scope);
                    }
                    yield json(ctx, HttpResponseStatus.OK, body);
                }
                case NOT_FOUND -> text(ctx, HttpResponseStatus.NOT_FOUND,
                        "not found: no request waits under " + id + " (answered, timed out, or never held)\n");
                case SCOPE_NOT_OFFERED -> text(ctx, HttpResponseStatus.BAD_REQUEST,
                        "bad request: scope " + scope + " is not among approvals.scopes\n");
            };
            send(ctx, request, keepAlive, r);
        }));
    }

    private static FullHttpResponse json(ChannelHandlerContext ctx, HttpResponseStatus status, ObjectNode body) {
        FullHttpResponse r = text(ctx, status, body.toString() + "\n");
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON);
        return r;
    }

    private static void send(ChannelHandlerContext ctx, FullHttpRequest request, boolean keepAlive,
                             FullHttpResponse response) {
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
