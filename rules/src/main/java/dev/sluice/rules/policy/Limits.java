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
 */
public record Limits(Duration headerTimeout, Duration idleTimeout, int maxHeaderBytes, long maxInspectedBodyBytes,
                     int maxConnectionsPerExtension) {
}
