package dev.sluice.proxy.forward;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;

/**
 * How a response head is framed toward the client (RFC 9112 sections 6 and 9.3): a pure function of the
 * client's request (version, method), the status, and what the origin's head says about its framing.
 * The answer to the client is always HTTP/1.1 with a framing it can read:
 * <ul>
 *   <li>no body (HEAD, 204, 304): as it is;</li>
 *   <li>a body delimited by the origin closing (no length, not chunked): re-framed as chunked for an
 *       HTTP/1.1 client, delimited by close for an HTTP/1.0 client; that upstream connection is never
 *       reused;</li>
 *   <li>a chunked body to an HTTP/1.0 client (which cannot read chunks): sent delimited by close;</li>
 *   <li>otherwise the origin's own framing; the upstream connection is reusable when the origin keeps
 *       it alive.</li>
 * </ul>
 *
 * @param chunk set {@code Transfer-Encoding: chunked} on the response
 * @param unchunk remove chunked framing (the body is then delimited by close)
 * @param closeDownstream the client connection closes after this response ({@code Connection: close})
 * @param upstreamReusable the upstream connection may carry the next exchange
 */
record ResponseFraming(boolean chunk, boolean unchunk, boolean closeDownstream, boolean upstreamReusable) {

    /**
     * @param downstreamVersion the client's request version (HTTP/1.0 or HTTP/1.1)
     * @param method the client's request method
     * @param status the response status code (a final one, 200..599)
     * @param chunked whether the origin's response is chunked
     * @param lengthKnown whether the origin's response has a Content-Length
     * @param originKeepAlive whether the origin keeps its connection alive after this response
     */
    static ResponseFraming of(HttpVersion downstreamVersion, HttpMethod method, int status, boolean chunked,
                              boolean lengthKnown, boolean originKeepAlive) {
        boolean http10 = downstreamVersion.equals(HttpVersion.HTTP_1_0);
        boolean bodyless = HttpMethod.HEAD.equals(method) || status == 204 || status == 304;
        if (!bodyless && !chunked && !lengthKnown) {
            return new ResponseFraming(!http10, false, http10, false);
        }
        if (chunked && http10) {
            return new ResponseFraming(false, true, true, originKeepAlive);
        }
        return new ResponseFraming(false, false, false, originKeepAlive);
    }
}
