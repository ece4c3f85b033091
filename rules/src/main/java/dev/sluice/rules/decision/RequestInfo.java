package dev.sluice.rules.decision;

import java.util.Objects;

/**
 * The parts of an HTTP request that rules may look at, where the request is visible (plain HTTP,
 * intercepted HTTPS). A CONNECT tunnel has none.
 *
 * @param method the request method, upper case as sent (RFC 9110 section 9)
 * @param path the path of the request-target without query, starting with {@code /}
 */
public record RequestInfo(String method, String path) {
    public RequestInfo {
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
    }
}
