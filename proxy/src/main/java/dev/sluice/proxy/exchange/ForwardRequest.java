package dev.sluice.proxy.exchange;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.metrics.TrafficMeter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.target.HttpTarget;
import io.netty.handler.codec.http.HttpRequest;

/**
 * An allowed plain-HTTP request, passed from the request phase to the forwarding phase. Its body, if
 * any, follows as {@code HttpContent} messages up to a {@code LastHttpContent}.
 *
 * @param request the request as it goes upstream: origin-form request-target, Host rebuilt from the
 *                absolute-form, hop-by-hop fields removed
 * @param target the parsed absolute-form
 * @param decision the name decision (allow or would_deny)
 * @param policy the snapshot that decided; the dial uses the same one
 * @param audit this exchange's audit record, emitted once by the forwarder
 * @param downstreamKeepAlive whether the client wants the connection kept after this exchange
 * @param traffic the byte counters of this exchange's extension and destination
 * @param responseScan what looks at the response as it streams (report-mode credential scan), or null
 * @param websocket for a WebSocket opening handshake (RFC 6455 section 4) going to the origin: the
 *                  {@code websocket.mode} its connection gets after a {@code 101} ({@code plain} or
 *                  {@code relay}); null for any other request
 */
public record ForwardRequest(HttpRequest request, HttpTarget target, Decision decision, Policy policy,
                             AuditEvent audit, boolean downstreamKeepAlive, TrafficMeter traffic,
                             @Nullable ResponseScan responseScan, @Nullable String websocket) {

    /** The same request without a response scan. */
    public ForwardRequest(HttpRequest request, HttpTarget target, Decision decision, Policy policy, AuditEvent audit,
                          boolean downstreamKeepAlive, TrafficMeter traffic) {
        this(request, target, decision, policy, audit, downstreamKeepAlive, traffic, null, null);
    }

    /** Returns this request with {@code scan} looking at its response. */
    public ForwardRequest withResponseScan(ResponseScan scan) {
        return new ForwardRequest(request, target, decision, policy, audit, downstreamKeepAlive, traffic, scan,
                websocket);
    }

    /** Returns this request as a WebSocket handshake whose connection gets {@code mode} after a 101. */
    public ForwardRequest withWebSocket(String mode) {
        return new ForwardRequest(request, target, decision, policy, audit, downstreamKeepAlive, traffic,
                responseScan, mode);
    }

    /** Looks at a response as it streams through, without changing it. Used on the event loop. */
    public interface ResponseScan {
        /** Called with the final (non-1xx) response head. */
        void onHead(io.netty.handler.codec.http.HttpResponse head);

        /** Called with each body chunk (not retained: read it now), {@code last} for the final one. */
        void onContent(io.netty.buffer.ByteBuf content, boolean last, AuditEvent audit);

        /**
         * Returns why this final response head must not be relayed at all, or null to relay it (the
         * default). Asked before anything of the response is written downstream: the forwarder then
         * closes the upstream connection and answers the refusal (its {@code detail} goes to the record's
         * {@code error}).
         *
         * @param head the final (non-1xx) response head, not to be kept
         */
        default ExchangeControl.Abort refuseHead(io.netty.handler.codec.http.HttpResponse head) {
            return null;
        }

        /**
         * Returns why the response must not go on (read after each {@link #onContent}), or null to let it
         * stream: the forwarder then closes the downstream connection after the chunk just relayed.
         */
        default String stopReason() {
            return null;
        }

        /** Returns a scan that runs {@code first}, then {@code second}; either may be null. */
        static ResponseScan both(ResponseScan first, ResponseScan second) {
            if (first == null) {
                return second;
            }
            if (second == null) {
                return first;
            }
            return new ResponseScan() {
                @Override
                public void onHead(io.netty.handler.codec.http.HttpResponse head) {
                    first.onHead(head);
                    second.onHead(head);
                }

                @Override
                public void onContent(io.netty.buffer.ByteBuf content, boolean last, AuditEvent audit) {
                    first.onContent(content, last, audit);
                    second.onContent(content, last, audit);
                }

                @Override
                public ExchangeControl.Abort refuseHead(io.netty.handler.codec.http.HttpResponse head) {
                    ExchangeControl.Abort refusal = first.refuseHead(head);
                    return refusal != null ? refusal : second.refuseHead(head);
                }

                @Override
                public String stopReason() {
                    String reason = first.stopReason();
                    return reason != null ? reason : second.stopReason();
                }
            };
        }
    }
}
