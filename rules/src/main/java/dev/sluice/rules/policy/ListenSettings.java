package dev.sluice.rules.policy;

import java.net.InetSocketAddress;
import org.jspecify.annotations.Nullable;

/**
 * The {@code listen} section; read at start only. Addresses are IP literals (never resolved); port 0
 * means "any free port".
 *
 * @param proxy explicit listener (default 127.0.0.1:3128)
 * @param transparent transparent listener (TLS by SNI, HTTP by Host; docs/transparent.md), or null
 * @param dns DNS responder (UDP and TCP; port 53 when not written), or null; when set, {@code transparent} has a
 *            specific (non-wildcard) address, which is the answer given for allowed names
 * @param admin admin listener (default 127.0.0.1:9901)
 */
public record ListenSettings(InetSocketAddress proxy, @Nullable InetSocketAddress transparent, @Nullable InetSocketAddress dns,
                             InetSocketAddress admin) {
}
