package dev.sluice.proxy.request;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;

/**
 * The explicit proxy's front: the extension comes from {@code Proxy-Authorization: Basic name:token}
 * (RFC 7617; RFC 9110 section 11.7.2), else the {@code default} extension; plain HTTP requests come in
 * absolute-form ({@code http://} only), tunnels as CONNECT in authority-form (RFC 9112 section 3.2).
 * Origin-form and asterisk-form are refused ({@link OriginFormException}).
 */
public final class ExplicitFront implements RequestFront {

    /** The {@code listener} label of this listener in audit records and metrics. */
    public static final Listener LISTENER = Listener.EXPLICIT;

    @Override
    public Listener listener() {
        return LISTENER;
    }

    @Override
    public boolean identifiesByProxyAuthorization() {
        return true;
    }

    @Override
    public Optional<Extension> identify(Policy policy, HttpRequest request) {
        return identify(policy, request.headers().get(HttpHeaderNames.PROXY_AUTHORIZATION));
    }

    /**
     * Returns the extension named by {@code Proxy-Authorization: Basic name:token}, the {@code default}
     * extension when the header is absent, or empty when neither applies. Wrong credentials never fall
     * back to {@code default}.
     *
     * @param authorization the field value, or null when the request has none
     */
    static Optional<Extension> identify(Policy policy, @Nullable String authorization) {
        if (authorization == null) {
            return policy.defaultExtension();
        }
        String value = authorization.trim();
        int space = value.indexOf(' ');
        if (space <= 0 || !value.substring(0, space).toLowerCase(Locale.ROOT).equals("basic")) {
            return Optional.empty();
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(value.substring(space + 1).trim()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        int colon = decoded.indexOf(':');
        if (colon <= 0) {
            return Optional.empty();
        }
        return policy.authenticate(decoded.substring(0, colon), decoded.substring(colon + 1));
    }

    @Override
    public boolean opensTunnel(HttpRequest request) {
        return HttpMethod.CONNECT.equals(request.method());
    }

    @Override
    public Target tunnelTarget(HttpRequest request) throws MalformedTargetException {
        return TargetParser.parseAuthority(request.uri());
    }

    @Override
    public HttpTarget target(HttpRequest request) throws MalformedTargetException, OriginFormException {
        String uri = request.uri();
        if (uri.startsWith("/") || uri.equals("*")) {
            throw new OriginFormException("origin-form request-target on the proxy listener (expected: absolute-form)");
        }
        return TargetParser.parseAbsoluteForm(uri);
    }

    @Override
    public String scheme(HttpRequest request) {
        return opensTunnel(request) ? "https" : "http";
    }

    @Override
    public void describe(AuditEvent audit) {
        // tls.mode is known only once the request is placed: none for plain HTTP, tunnel for a CONNECT.
    }

    @Override
    public void describeForwarded(AuditEvent audit) {
        audit.tlsMode(TlsMode.NONE);
    }
}
