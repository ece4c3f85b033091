package dev.sluice.proxy.exchange;


import dev.sluice.proxy.audit.TlsMode;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.InspectedHost;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import io.netty.handler.codec.http.HttpRequest;
import java.util.Optional;

/**
 * How a listener feeds HTTP requests into the request phase ({@code request.ExplicitRequestHandler}):
 * who the client is, and where a request goes. The explicit listener's front ({@code request.ExplicitFront})
 * identifies by {@code Proxy-Authorization} and takes absolute-form and CONNECT requests; the
 * transparent listener's front identifies by source address and takes the target from {@code Host} plus
 * the original destination port; inside an intercepted tunnel the front is the tunnel's own extension and
 * host. Everything after that (decide, forward, audit, counters) is shared.
 */
public interface RequestFront {

    /** Returns the {@code listener} label of audit records and metrics, e.g. {@code transparent}. */
    Listener listener();

    /**
     * Returns the extension {@code request} comes from under {@code policy}, or empty when none applies
     * (answered 407 {@code unknown_extension}).
     */
    Optional<Extension> identify(Policy policy, HttpRequest request);

    /**
     * Returns the target of a request that does not open a tunnel.
     *
     * @throws MalformedTargetException for any request-target or Host this front cannot place
     *     (answered 400 {@code malformed_target})
     * @throws MisdirectedRequestException when the request names another origin than its connection
     *     (answered 421 {@code host_mismatch})
     * @throws OriginFormException for an origin-form request where absolute-form is required (the explicit
     *     proxy; answered 400 {@code malformed_request})
     */
    HttpTarget target(HttpRequest request)
            throws MalformedTargetException, MisdirectedRequestException, OriginFormException;

    /**
     * Answers whether this front identifies the extension by the request's {@code Proxy-Authorization}
     * (the explicit listener; then a repeated one is refused as an ambiguous identity); false by default.
     */
    default boolean identifiesByProxyAuthorization() {
        return false;
    }

    /** Answers whether {@code request} opens a tunnel (a CONNECT on the explicit listener); false by default. */
    default boolean opensTunnel(HttpRequest request) {
        return false;
    }

    /**
     * Returns the target of a request that {@link #opensTunnel opens a tunnel} (authority-form, RFC 9112
     * section 3.2.3).
     *
     * @throws MalformedTargetException when the authority has no canonical form, or this front opens no tunnels
     */
    default Target tunnelTarget(HttpRequest request) throws MalformedTargetException {
        throw new MalformedTargetException("tunnels are not opened on the " + listener().label() + " listener");
    }

    /** Returns the scheme of {@code request} for its record ({@code http}, {@code https} for tunnels and interception). */
    default String scheme(HttpRequest request) {
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
        audit.tlsMode(TlsMode.NONE);
    }

    /**
     * Returns the {@code inspect} entry of the host this front's requests go to when they are
     * intercepted (its {@code websocket} mode decides WebSocket upgrades), or empty for a plain
     * listener: there a WebSocket upgrade is relayed as bytes ({@code websocket.mode: plain}).
     */
    default Optional<InspectedHost> intercepted(Policy policy) {
        return Optional.empty();
    }

    /**
     * Answers whether this front's requests arrive inside TLS that Sluice terminated (an intercepted
     * tunnel); false for a plain listener, where a request to an inspected host is refused
     * ({@code Decider.decidePlainHttp}).
     */
    default boolean readsInsideTls() {
        return false;
    }

    /** Adds what this front knows to the record of a request that goes on to the forwarder. */
    default void describeForwarded(AuditEvent audit) {
    }
}
