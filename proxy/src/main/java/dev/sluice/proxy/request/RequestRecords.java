package dev.sluice.proxy.request;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.Listener;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.MisdirectedRequestException;
import dev.sluice.proxy.exchange.OriginFormException;
import dev.sluice.proxy.exchange.RequestFront;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What the request phase writes into audit records without deciding anything: a new record for a
 * request (listener, client address), the record of a connection whose request head stalled, and, for a request refused before its
 * target mattered, the target as far as it places (best effort: a target that does not place leaves the
 * record without one; the refusal's reason never depends on it).
 */
final class RequestRecords {

    private final ProxyContext context;
    private final Listener listener;

    /**
     * @param context where records go ({@link ProxyContext#audit}) and their clock
     * @param listener the listener label of every record
     */
    RequestRecords(ProxyContext context, Listener listener) {
        this.context = context;
        this.listener = listener;
    }

    /** Returns a new record of a request (or connection) on {@code channel}: its listener and client. */
    AuditEvent open(Channel channel) {
        return new AuditEvent(context.audit(), context.clock())
                .listener(listener)
                .client((InetSocketAddress) channel.remoteAddress());
    }

    /**
     * Writes the record of a connection closed because no complete request head came within
     * {@code limits.header_timeout} ({@code header_timeout}).
     *
     * @param boundExtension the extension the connection is bound to, or null
     */
    void headTimedOut(Channel channel, Duration headerTimeout, @Nullable String boundExtension) {
        stall(channel, Reason.HEADER_TIMEOUT, BuiltinRules.HEADER_TIMEOUT,
                "no complete request head within " + headerTimeout.toMillis() + " ms", boundExtension);
    }

    /**
     * Writes the record of a connection closed because a request head began and then no byte came for
     * {@code limits.idle_timeout} ({@code idle_timeout}).
     *
     * @param boundExtension the extension the connection is bound to, or null
     */
    void headStalled(Channel channel, Duration idleTimeout, @Nullable String boundExtension) {
        stall(channel, Reason.IDLE_TIMEOUT, BuiltinRules.IDLE_TIMEOUT,
                "request head incomplete: no byte for " + idleTimeout.toMillis() + " ms", boundExtension);
    }

    private void stall(Channel channel, Reason reason, String rule, String error, @Nullable String boundExtension) {
        AuditEvent audit = open(channel).decision(Decision.deny(reason, rule)).error(error);
        if (boundExtension != null) {
            audit.extension(boundExtension);
        }
        audit.emit();
    }

    /**
     * Fills in the target of a request refused before its target mattered, as the explicit listener's
     * forms read it (authority-form CONNECT, absolute-form otherwise; origin-form leaves no target).
     */
    static void describeTarget(HttpRequest request, AuditEvent audit) {
        try {
            if (HttpMethod.CONNECT.equals(request.method())) {
                Target target = TargetParser.parseAuthority(request.uri());
                audit.scheme("https").server(target.host(), target.port());
            } else if (!request.uri().startsWith("/")) {
                HttpTarget target = TargetParser.parseAbsoluteForm(request.uri());
                audit.scheme("http").server(target.target().host(), target.target().port())
                        .urlPath(target.pathAndQuery());
            }
        } catch (MalformedTargetException e) {
            // The record keeps no target; the refusal's reason does not depend on it.
        }
    }

    /**
     * Fills the record of a request refused before its decision with what {@code front} can place of it
     * (what the front adds to every record, then target and path).
     */
    static void describeRefused(RequestFront front, HttpRequest request, AuditEvent audit) {
        front.describe(audit);
        try {
            if (front.opensTunnel(request)) {
                Target target = front.tunnelTarget(request);
                audit.scheme(front.scheme(request)).server(target.host(), target.port());
            } else {
                HttpTarget target = front.target(request);
                audit.scheme(front.scheme(request)).server(target.target().host(), target.target().port())
                        .urlPath(target.pathAndQuery());
            }
        } catch (MalformedTargetException | MisdirectedRequestException | OriginFormException e) {
            // The record keeps no target; the refusal's reason does not depend on it.
        }
    }
}
