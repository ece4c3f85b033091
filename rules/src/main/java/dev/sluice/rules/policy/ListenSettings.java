package dev.sluice.rules.policy;

import java.net.InetSocketAddress;

/**
 * The {@code listen} section; read at start only.
 *
 * @param proxy explicit listener (default 127.0.0.1:3128)
 * @param transparent transparent listener, or null
 * @param dns DNS listener, or null
 * @param admin admin listener (default 127.0.0.1:9901)
 */
public record ListenSettings(InetSocketAddress proxy, InetSocketAddress transparent, InetSocketAddress dns,
                             InetSocketAddress admin) {
}
