package dev.sluice.proxy.dial;

/**
 * What an upstream connection carries, which picks the parent of {@code upstream_proxy}:
 * {@link #TUNNEL} uses {@code https}, {@link #PLAIN_HTTP} uses {@code http}.
 */
public enum UpstreamKind {
    /** A CONNECT tunnel, blind or intercepted (TLS to the origin rides inside). */
    TUNNEL,
    /** Plain HTTP forwarding (requests in clear). */
    PLAIN_HTTP
}
