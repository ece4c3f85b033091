package dev.sluice.proxy.forward;

import dev.sluice.proxy.exchange.ForwardRequest;
import org.jspecify.annotations.Nullable;

/**
 * The exchange one {@link HttpForwarder} is carrying on its downstream connection: the request, and what is
 * known so far of its two halves — whether the request body ended, whether (and how) the response began,
 * whether either connection must close after it. Plain state, confined to the downstream connection's event
 * loop; the forwarder (request side) and its {@link ResponseRelay} (response side) read and write it, and
 * whichever ends the exchange sets {@link #request} back to null.
 *
 * <p>Ownership: holds no buffers. The {@link ForwardRequest}'s head is written upstream by the forwarder
 * (the write releases it); its audit record is emitted once, by whoever ends the exchange.
 */
final class Exchange {

    /** The exchange in progress, or null between exchanges (and once one has ended). */
    @Nullable ForwardRequest request;
    /** The client's {@code Sec-WebSocket-Extensions} of an inspected WebSocket handshake in flight. */
    @Nullable String clientExtensions;
    /** The request's {@code LastHttpContent} arrived (its body was wholly read from the client). */
    boolean requestComplete;
    /** A final response head was written downstream: a failure now can only close the connection. */
    boolean responseStarted;
    /** The response being relayed is an interim (1xx) one; its end is not the exchange's. */
    boolean interimResponse;
    /** The origin's framing leaves its connection reusable after this response. */
    boolean upstreamKeepAlive;
    /** The downstream connection closes after this exchange ({@code Connection: close} on the response). */
    boolean closeDownstream;
    /** A refusal was sent before the request's end: the rest of its body is dropped, then the connection closes. */
    boolean lingering;
    /** The current request was already sent again after its reused connection closed. */
    boolean replayed;
    /** Any response head (interim included) arrived for the current request. */
    boolean responseBegun;

    /**
     * A new request: it becomes the exchange in progress, nothing of its body or response seen yet, and the
     * downstream connection closes after it unless the client keeps it alive.
     */
    void begin(ForwardRequest next) {
        request = next;
        clientExtensions = null;
        requestComplete = false;
        responseStarted = false;
        interimResponse = false;
        upstreamKeepAlive = false;
        replayed = false;
        responseBegun = false;
        closeDownstream = !next.downstreamKeepAlive();
    }
}
