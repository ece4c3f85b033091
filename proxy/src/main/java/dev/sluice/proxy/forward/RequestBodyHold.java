package dev.sluice.proxy.forward;

import io.netty.handler.codec.http.HttpContent;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * The request body of one {@link HttpForwarder}'s current exchange while no upstream channel can take it
 * yet (a dial, a TLS/ALPN handshake, an h2 stream being opened): the chunks that arrive meanwhile are held
 * here in order, and {@link #bodyBytes} counts every body byte of the exchange (held or not), which decides
 * whether a request may be replayed. Confined to the forwarder's event loop.
 *
 * <p>Buffer ownership: {@link #hold} takes the chunk's reference; {@link #poll} hands it back to the caller
 * (who writes it upstream, which releases it); {@link #release} releases whatever is still held. Whoever
 * ends a wait without sending the body must call {@link #release}.
 */
final class RequestBodyHold {

    private final ArrayDeque<HttpContent> held = new ArrayDeque<>();
    private boolean waiting;
    private long bodyBytes;

    /** A new exchange: no body byte seen yet. */
    void startExchange() {
        bodyBytes = 0;
    }

    /** Counts {@code content}'s readable bytes as body of the current exchange (does not take it). */
    void count(HttpContent content) {
        bodyBytes += content.content().readableBytes();
    }

    /** Body bytes of the current exchange seen so far. */
    long bodyBytes() {
        return bodyBytes;
    }

    /** An upstream channel is being dialled or negotiated: body chunks are held until it ends. */
    void startWaiting() {
        waiting = true;
    }

    /** The dial or negotiation ended (either way). Chunks held so far stay until polled or released. */
    void stopWaiting() {
        waiting = false;
    }

    /** Whether a dial or negotiation is under way (body chunks go to {@link #hold}). */
    boolean waiting() {
        return waiting;
    }

    /** Holds {@code content}, taking its reference. */
    void hold(HttpContent content) {
        held.add(content);
    }

    /** The oldest held chunk, whose reference passes to the caller; null when none is held. */
    @Nullable HttpContent poll() {
        return held.poll();
    }

    /** Releases every chunk still held. */
    void release() {
        while (!held.isEmpty()) {
            held.poll().release();
        }
    }
}
