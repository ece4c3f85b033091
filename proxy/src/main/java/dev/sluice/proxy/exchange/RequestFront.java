package dev.sluice.proxy.exchange;


import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import io.netty.handler.codec.http.HttpRequest;
import java.util.Optional;

/**
 * How a listener other than the explicit proxy feeds plain HTTP requests into the request phase
 * ({@code request.ExplicitRequestHandler}): who the client is, and where an origin-form request goes. The
 * explicit listener has no front (Proxy-Authorization and absolute-form / CONNECT); the transparent
 * listener's front identifies by source address and takes the target from {@code Host} plus the
 * original destination port. Everything after that (decide, forward, audit, counters) is shared.
 */
public interface RequestFront {

    /** Returns the {@code listener} label of audit records and metrics, e.g. {@code transparent}. */
    String listener();

    /** Returns the extension of this connection under {@code policy}, or empty when none applies. */
    Optional<Extension> identify(Policy policy);

    /**
     * Returns the target of {@code request} (origin-form request-target, {@code Host} header).
     *
     * @throws MalformedTargetException for any request-target or Host this front cannot place
     *     (answered 400 {@code malformed_target}); CONNECT is among them
     */
    HttpTarget target(HttpRequest request) throws MalformedTargetException, MisdirectedRequestException;

    /** Returns the scheme of the requests this front sees ({@code http}, or {@code https} inside interception). */
    default String scheme() {
        return "http";
    }

    /** Returns the port a {@code Host} without a port means (80, or 443 inside interception). */
    default int defaultPort() {
        return 80;
    }

    /** Answers whether the request phase binds the connection to the extension (false when an outer phase did). */
    default boolean bindsConnection() {
        return true;
    }

    /** Adds what this front knows to each request's audit record ({@code tls.mode}, {@code tls.sni}). */
    default void describe(AuditEvent audit) {
        audit.tlsMode("none");
    }
}
