package dev.sluice.rules.policy;

import java.time.Duration;

/**
 * The {@code limits} section, with the documented defaults for anything not written.
 *
 * @param headerTimeout time allowed for a complete request header block (default 15s)
 * @param idleTimeout time a connection may see no bytes in either direction (default 120s)
 * @param maxHeaderBytes largest request header block in bytes, request line included (default 32768)
 * @param maxInspectedBodyBytes largest body Sluice inspects, in bytes (default 32 MiB)
 * @param maxConnectionsPerExtension concurrent client connections per extension (default 512)
 * @param egressBudgetBytes bytes an extension may send toward the internet per window; 0 means no
 *                          budget (the default). Over it, new requests and tunnels get 429 {@code egress_budget}
 * @param egressBudgetWindow the budget's window, fixed and aligned to the epoch (default 1h)
 * @param maxBufferedBodyBytes largest request body, in bytes as received, that Sluice holds whole on an
 *                             inspected host before sending it on with a {@code Content-Length}
 *                             (default {@value #DEFAULT_MAX_BUFFERED_BODY_BYTES}); larger bodies stream
 * @param maxWebsocketMessageBytes largest WebSocket message (all its fragments, RFC 6455 section 5.4) Sluice
 *                                 reassembles to inspect, in bytes (default
 *                                 {@value #DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES}); over it both legs close 1009
 * @param tokenBudget {@code limits.token_budget.tokens}: LLM tokens (input plus output, as the providers'
 *                    responses report them) each extension may use per window; 0 means no budget (the
 *                    default). Once spent, its next request to an inspected host gets 429 {@code token_budget}
 * @param tokenBudgetWindow {@code limits.token_budget.window}, fixed and aligned to the epoch (default 1h)
 */
public record Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                     int maxConnectionsPerExtension, long egressBudgetBytes, Duration egressBudgetWindow,
                     int maxBufferedBodyBytes, int maxWebsocketMessageBytes, long tokenBudget,
                     Duration tokenBudgetWindow) {

    /** The same limits without a token budget (for callers that predate it). */
    public Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                  int maxConnectionsPerExtension, long egressBudgetBytes, Duration egressBudgetWindow,
                  int maxBufferedBodyBytes, int maxWebsocketMessageBytes) {
        this(headerTimeout, idleTimeout, maxHeaderBytes, maxInspectedBodyBytes, maxConnectionsPerExtension,
                egressBudgetBytes, egressBudgetWindow, maxBufferedBodyBytes, maxWebsocketMessageBytes, 0,
                Duration.ofHours(1));
    }

    /** Default of {@code limits.max_buffered_body}: 1 MiB. */
    public static final int DEFAULT_MAX_BUFFERED_BODY_BYTES = 1 << 20;

    /** Default of {@code limits.max_websocket_message}: 16 MiB. */
    public static final int DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES = 16 << 20;

    /** The same limits with the default {@code max_websocket_message}. */
    public Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                  int maxConnectionsPerExtension, long egressBudgetBytes, Duration egressBudgetWindow,
                  int maxBufferedBodyBytes) {
        this(headerTimeout, idleTimeout, maxHeaderBytes, maxInspectedBodyBytes, maxConnectionsPerExtension,
                egressBudgetBytes, egressBudgetWindow, maxBufferedBodyBytes, DEFAULT_MAX_WEBSOCKET_MESSAGE_BYTES);
    }

    /** The same limits with the default {@code max_buffered_body} (for callers that predate it). */
    public Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                  int maxConnectionsPerExtension, long egressBudgetBytes, Duration egressBudgetWindow) {
        this(headerTimeout, idleTimeout, maxHeaderBytes, maxInspectedBodyBytes, maxConnectionsPerExtension,
                egressBudgetBytes, egressBudgetWindow, DEFAULT_MAX_BUFFERED_BODY_BYTES);
    }

    /** The same limits without an egress budget (for callers that predate it). */
    public Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                  int maxConnectionsPerExtension) {
        this(headerTimeout, idleTimeout, maxHeaderBytes, maxInspectedBodyBytes, maxConnectionsPerExtension, 0,
                Duration.ofHours(1));
    }
}
