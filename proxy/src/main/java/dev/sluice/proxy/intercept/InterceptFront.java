package dev.sluice.proxy.intercept;

import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.exchange.MisdirectedRequestException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import java.util.Objects;
import java.util.Optional;

/**
 * How requests inside an intercepted tunnel enter the shared request phase: every request is the
 * tunnel's extension's (looked up in the running policy), to the tunnel's target; it must be
 * origin-form, and its {@code Host} must name that target (421 {@code host_mismatch} otherwise, RFC 9110
 * section 15.5.20). The connection was bound to the extension by the CONNECT, so it is not bound again.
 *
 * @param extension the name of the extension that opened the tunnel
 * @param target the CONNECT target, which the SNI also named
 * @param listener the listener the tunnel came in on ({@code explicit} or {@code transparent})
 */
public record InterceptFront(String extension, Target target, Listener listener) implements RequestFront {

    public InterceptFront {
        Objects.requireNonNull(extension, "extension");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(listener, "listener");
    }

    @Override
    public Optional<Extension> identify(Policy policy, HttpRequest request) {
        return policy.extension(extension);
    }

    @Override
    public HttpTarget target(HttpRequest request) throws MalformedTargetException, MisdirectedRequestException {
        String uri = request.uri();
        if (!uri.startsWith("/")) {
            throw new MalformedTargetException("origin-form expected inside a tunnel");
        }
        String host = request.headers().get(HttpHeaderNames.HOST);
        if (host == null) {
            throw new MalformedTargetException("no Host");
        }
        Target named = host.lastIndexOf(':') > host.lastIndexOf(']')
                ? TargetParser.parseAuthority(host) : TargetParser.canonicalHost(host, defaultPort());
        if (!named.host().equals(target.host()) || named.port() != target.port()) {
            throw new MisdirectedRequestException("Host names " + named.authority() + ", the tunnel goes to "
                    + target.authority());
        }
        return new HttpTarget("https", target, uri);
    }

    @Override
    public String scheme(HttpRequest request) {
        return "https";
    }

    @Override
    public int defaultPort() {
        return 443;
    }

    @Override
    public boolean bindsConnection() {
        return false;
    }

    @Override
    public Optional<dev.sluice.rules.policy.InspectedHost> intercepted(Policy policy) {
        return policy.inspected(target.host());
    }

    @Override
    public boolean readsInsideTls() {
        return true;
    }

    @Override
    public void describe(AuditEvent audit) {
        audit.tlsMode(TlsMode.INTERCEPT).tlsSni(target.host());
    }
}
