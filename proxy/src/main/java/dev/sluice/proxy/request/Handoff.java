package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ConnectRequest;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.proxy.http.HopByHop;
import dev.sluice.proxy.http.HttpPipeline;
import dev.sluice.proxy.http.WebSocketUpgrade;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.WebSocketMode;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.Target;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How the request phase hands an allowed request on (design.md step 4): a CONNECT to the tunnel phase as a
 * {@link ConnectRequest}, after which the client speaks raw bytes; any other request to the forwarder as a
 * {@link ForwardRequest} in origin-form with hop-by-hop fields removed and {@code Host} rebuilt from the
 * canonical target. A protocol upgrade goes on only as a well-formed WebSocket handshake the rules allow
 * ({@link #upgradeRefusal}); nothing here decides by itself.
 */
final class Handoff {

    /** Rule id of the refusal of a request that asks for a protocol upgrade. */
    static final String RULE_UPGRADE = BuiltinRules.HTTP_UPGRADE;

    /** Rule id of the refusal of a WebSocket upgrade by an intercepted host's {@code websocket} key. */
    static final String RULE_WEBSOCKET = BuiltinRules.INSPECT_WEBSOCKET;

    private Handoff() {
    }

    /**
     * Returns the refusal of an allowed request that asks for a protocol upgrade, or null when it asks
     * for none or for a WebSocket handshake that may go on. Never strip the upgrade and forward the rest:
     * the origin would see a plain request and the client an answer it cannot explain.
     * <ul>
     *   <li>501 {@code upgrade_not_supported}: anything but a well-formed WebSocket handshake
     *       ({@link WebSocketUpgrade#problem});</li>
     *   <li>403 {@code websocket_refused}: a handshake to an intercepted host whose {@code websocket} is
     *       {@code refuse} ({@link Decider#decideWebSocket}).</li>
     * </ul>
     * A refusal with a body closes the connection anyway; these keep it otherwise.
     */
    static @Nullable Refusal upgradeRefusal(HttpRequest request, RequestFront front, Policy policy) {
        if (!HopByHop.upgradeRequested(request.headers())) {
            return null;
        }
        String problem = WebSocketUpgrade.problem(request);
        if (problem != null) {
            String protocols = HopByHop.upgradeProtocols(request.headers());
            return new Refusal(Decision.deny(Reason.UPGRADE_NOT_SUPPORTED, RULE_UPGRADE),
                    "protocol upgrade" + (protocols.isEmpty() ? "" : " to " + protocols) + " is not supported: "
                            + problem, false);
        }
        Optional<InspectedHost> inspected = front.intercepted(policy);
        Decision upgrade = Decider.decideWebSocket(inspected.map(InspectedHost::websocket).orElse(null));
        if (!upgrade.permits()) {
            return new Refusal(upgrade, "inspect." + inspected.get().host() + ".websocket: refuse", false);
        }
        return null;
    }

    /**
     * Returns the {@code websocket.mode} of an allowed WebSocket handshake ({@code plain} on a listener
     * that does not intercept, else the host's mode label), or null when {@code request} asks for no
     * upgrade. Call only when {@link #upgradeRefusal} found none.
     */
    static @Nullable String websocketMode(HttpRequest request, RequestFront front, Policy policy) {
        if (!HopByHop.upgradeRequested(request.headers())) {
            return null;
        }
        WebSocketMode mode = front.intercepted(policy).map(InspectedHost::websocket).orElse(null);
        return mode == null ? "plain" : mode.label();
    }

    /**
     * Hands an allowed CONNECT to the tunnel phase: the record's {@code tls.mode} is {@code tunnel} until
     * the tunnel phase says otherwise; then, from here on the client speaks raw bytes, the decoder is
     * removed, which hands the tunnel phase the bytes sent early (a TLS ClientHello right behind the
     * CONNECT header), untouched.
     */
    static void tunnel(ChannelHandlerContext ctx, ProxyContext context, DecidedRequest decided, Listener listener) {
        decided.audit().tlsMode(TlsMode.TUNNEL);
        ctx.fireChannelRead(new ConnectRequest(decided.target(), decided.decision(), decided.policy(), decided.audit(),
                context.traffic(decided.policy(), decided.extension(), decided.decision()), decided.extension().name(),
                listener, decided.request().headers().get(HttpHeaderNames.ACCEPT)));
        if (ctx.pipeline().get(HttpPipeline.DECODER) != null) {
            ctx.pipeline().remove(HttpPipeline.DECODER);
        }
    }

    /**
     * Hands an allowed request to the forwarder: its head in origin-form, hop-by-hop fields removed (a
     * WebSocket handshake's restored), {@code Host} rebuilt from the canonical target, chunked framing
     * kept; the body follows as the decoder produces it.
     *
     * @param websocket the handshake's {@code websocket.mode} ({@link #websocketMode}), or null
     */
    static void forward(ChannelHandlerContext ctx, ProxyContext context, DecidedRequest decided, RequestFront front,
                        @Nullable String websocket) {
        front.describeForwarded(decided.audit());
        HttpRequest request = decided.request();
        HttpTarget httpTarget = Objects.requireNonNull(decided.httpTarget(), "httpTarget");
        HttpRequest upstream = new DefaultHttpRequest(request.protocolVersion(), request.method(),
                httpTarget.pathAndQuery(), request.headers().copy());
        HttpHeaders headers = upstream.headers();
        HopByHop.strip(headers);
        headers.set(HttpHeaderNames.HOST, hostHeader(decided.target(), front.defaultPort()));
        if (HttpUtil.isTransferEncodingChunked(request)) {
            HttpUtil.setTransferEncodingChunked(upstream, true);
        }
        if (websocket != null) {
            WebSocketUpgrade.restore(request.headers(), headers);
        }
        ForwardRequest forward = new ForwardRequest(upstream, httpTarget, decided.decision(), decided.policy(),
                decided.audit(), HttpUtil.isKeepAlive(request),
                context.traffic(decided.policy(), decided.extension(), decided.decision()));
        ctx.fireChannelRead(websocket == null ? forward : forward.withWebSocket(websocket));
    }

    private static String hostHeader(Target target, int defaultPort) {
        return target.port() == defaultPort ? target.hostForUri() : target.authority();
    }
}
