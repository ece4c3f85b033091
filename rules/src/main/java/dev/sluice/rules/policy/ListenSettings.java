package dev.sluice.rules.policy;

import java.net.InetSocketAddress;

/**
 * The {@code listen} section; read at start only. Addresses are IP literals (never resolved); port 0
 * means "any free port".
 *
 * @param proxy explicit listener (default 127.0.0.1:3128)
 * @param transparent transparent listener, or null (always null in this build: the loader refuses a value)
 * @param dns DNS listener, or null (always null in this build: the loader refuses a value)
 * @param admin admin listener (default 127.0.0.1:9901)
 */
public record ListenSettings(InetSocketAddress proxy, InetSocketAddress transparent, InetSocketAddress dns,
                             InetSocketAddress admin) {
}
