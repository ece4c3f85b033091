package dev.sluice.rules.target;

import java.util.Objects;

/**
 * A parsed request-target: the absolute-form (RFC 9112 section 3.2.2) of a plain HTTP request, or an
 * intercepted request's origin-form with its tunnel's host.
 *
 * @param scheme {@code "http"} for a request read without TLS (an explicit proxy never sees {@code https}
 *               in absolute-form; such a request-target is rejected as malformed), {@code "https"} for a
 *               request inside an intercepted TLS tunnel
 * @param target canonical host and port (port 80 when the URI gives none)
 * @param pathAndQuery the origin-form to send upstream: path starting with {@code /} (never empty),
 *                     plus {@code ?query} when present; the fragment is dropped
 */
public record HttpTarget(String scheme, Target target, String pathAndQuery) {

    public HttpTarget {
        Objects.requireNonNull(scheme, "scheme");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(pathAndQuery, "pathAndQuery");
    }

    /** Returns the path without the query, e.g. {@code /v1/messages}. */
    public String path() {
        int q = pathAndQuery.indexOf('?');
        return q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    }
}
