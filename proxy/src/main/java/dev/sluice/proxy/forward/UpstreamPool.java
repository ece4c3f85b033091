package dev.sluice.proxy.forward;

import dev.sluice.certs.PinResult;
import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.rules.policy.Policy;
import io.netty.channel.Channel;
import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * Idle upstream connections (HTTP/1.1 over TLS, pins already checked) kept between the forwarders of
 * one downstream connection's HTTP/2 streams, so a stream can reuse the connection an earlier stream
 * finished with instead of dialling anew. Shared by the forwarders of one downstream connection only,
 * all on that connection's event loop (no locking). A connection is only taken for the same authority
 * under the same policy snapshot that dialled it; one that closed while parked is dropped; at most
 * {@code capacity} are kept (a further one is closed).
 */
public final class UpstreamPool {

    /** An idle upstream connection with what the next exchange needs of it. */
    record Parked(Channel channel, ByteCounter counter, String authority, Policy policy, @Nullable PinResult pin) {
    }

    private final int capacity;
    private final ArrayDeque<Parked> idle = new ArrayDeque<>();
    private boolean closed;

    /** @param capacity the most idle connections kept, at least 1 */
    public UpstreamPool(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity < 1: " + capacity);
        }
        this.capacity = capacity;
    }

    /** Returns an open idle connection to {@code authority} dialled under {@code policy}, or null. */
    Parked take(String authority, Policy policy) {
        for (Iterator<Parked> it = idle.iterator(); it.hasNext(); ) {
            Parked p = it.next();
            if (!p.channel().isActive()) {
                it.remove();
            } else if (p.authority().equals(authority) && p.policy() == policy) {
                it.remove();
                return p;
            }
        }
        return null;
    }

    /** Keeps {@code parked} for a later exchange, or closes it when the pool is full or closed. */
    void park(Parked parked) {
        idle.removeIf(p -> !p.channel().isActive());
        if (closed || idle.size() >= capacity) {
            parked.channel().close();
            return;
        }
        idle.add(parked);
    }

    /** Closes every idle connection; later ones are closed when parked. Call when the downstream closes. */
    public void close() {
        closed = true;
        while (!idle.isEmpty()) {
            idle.poll().channel().close();
        }
    }
}
