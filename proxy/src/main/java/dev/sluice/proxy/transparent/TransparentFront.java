package dev.sluice.proxy.transparent;

import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.core.SourceIdentity;

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
import java.net.InetAddress;
import java.util.List;
import java.util.Optional;

/**
 * Plain HTTP on the transparent listener: the client believes it talks to the origin, so requests are
 * origin-form (RFC 9112 section 3.2.1) and {@code Host} names the target. The target is
 * {@code Host}'s name (canonicalised as any target) on the port the client connected to (the original
 * destination port); a {@code Host} that names another port is refused, since the client's own idea
 * of where it connects must be the one decided. Identity is by source address.
 */
final class TransparentFront implements RequestFront {

    /** The {@code listener} label of the transparent listener. */
    static final Listener LISTENER = Listener.TRANSPARENT;

    private final InetAddress source;
    private final int originalPort;

    /**
     * @param source the client's address
     * @param originalPort the port the client connected to (before the redirect), 1..65535
     */
    TransparentFront(InetAddress source, int originalPort) {
        this.source = source;
        this.originalPort = originalPort;
    }

    @Override
    public Listener listener() {
        return LISTENER;
    }

    @Override
    public Optional<Extension> identify(Policy policy, HttpRequest request) {
        return SourceIdentity.identify(policy, source);
    }

    @Override
    public HttpTarget target(HttpRequest request) throws MalformedTargetException {
        if (HttpMethod.CONNECT.equals(request.method())) {
            throw new MalformedTargetException("CONNECT on the transparent listener (expected: origin-form requests)");
        }
        String uri = request.uri();
        if (!uri.startsWith("/")) {
            throw new MalformedTargetException("request-target is not origin-form (expected: /path on the transparent listener)");
        }
        List<String> hosts = request.headers().getAll(HttpHeaderNames.HOST);
        if (hosts.size() != 1) {
            throw new MalformedTargetException(hosts.isEmpty() ? "no Host header" : "more than one Host header");
        }
        String host = hosts.get(0).trim();
        for (int i = 0; i < host.length(); i++) {
            if ("/?#@\\ \t".indexOf(host.charAt(i)) >= 0) {
                throw new MalformedTargetException("Host header is not host[:port]");
            }
        }
        if (host.isEmpty()) {
            throw new MalformedTargetException("empty Host header");
        }
        HttpTarget parsed = TargetParser.parseAbsoluteForm("http://" + host + uri);
        int bracket = host.lastIndexOf(']');
        boolean explicitPort = host.indexOf(':', bracket + 1) >= 0;
        if (explicitPort && parsed.target().port() != originalPort) {
            throw new MalformedTargetException("Host port " + parsed.target().port()
                    + " differs from the port connected to (" + originalPort + ")");
        }
        Target target = new Target(parsed.target().host(), originalPort, parsed.target().address());
        return new HttpTarget(parsed.scheme(), target, parsed.pathAndQuery());
    }
}
