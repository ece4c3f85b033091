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
 */
public record Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                     int maxConnectionsPerExtension, long egressBudgetBytes, Duration egressBudgetWindow) {

    /** The same limits without an egress budget (for callers that predate it). */
    public Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                  int maxConnectionsPerExtension) {
        this(headerTimeout, idleTimeout, maxHeaderBytes, maxInspectedBodyBytes, maxConnectionsPerExtension, 0,
                Duration.ofHours(1));
    }
}
