package dev.sluice.proxy.forward;

import dev.sluice.certs.PinResult;
import dev.sluice.proxy.core.ByteCounter;
import dev.sluice.rules.policy.Policy;
import io.netty.channel.Channel;
import org.jspecify.annotations.Nullable;

/**
 * The upstream leg of one {@link HttpForwarder}: the upstream connection (an HTTP/1.1 connection or an
 * h2 stream's child channel) the current exchange is written on, or that is kept for the next one, and
 * what is known of it — its byte counter, the authority and policy snapshot it was opened for, its pin
 * result, how many exchanges it completed, and why it failed. Plain state, confined to the forwarder's
 * event loop; the forwarder and its {@link ResponseRelay} decide what each event does with it.
 *
 * <p>Ownership: the leg holds no buffers. The channel is the forwarder's to close while it is here;
 * {@link #close} closes it, {@link #detach} and {@link #park} hand it over (to a {@link WebSocketSwitch},
 * or to an {@link UpstreamPool}); each leaves the leg without a channel.
 */
final class UpstreamLeg {

    /** The upstream channel, or null when there is none. */
    @Nullable Channel channel;
    /** Counts {@link #channel}'s bytes into the exchange's record. */
    @Nullable ByteCounter counter;
    /** The {@code host:port} {@link #channel} was opened for. */
    @Nullable String authority;
    /** The policy snapshot {@link #channel} was opened under (compared by identity). */
    @Nullable Policy policy;
    /** The pin check of {@link #channel}'s TLS handshake, or null (plain, or not known yet). */
    @Nullable PinResult pin;
    /** Exchanges {@link #channel} completed (0: it has not answered anything yet). */
    int exchanges;
    /** Why {@link #channel} failed (a TLS handshake failure, an exception), or null. */
    @Nullable Throwable failure;
    /** The TLS handshake failure of an upstream connection no request was waiting for yet. */
    @Nullable Throwable handshakeFailure;
    /** The current request was written on a connection kept from an earlier exchange. */
    boolean reused;
    /** {@link #channel} is a stream of an h2 upstream connection (closed after each exchange). */
    boolean stream;

    /**
     * Takes {@code channel} as the leg's connection, with no failure known: {@code exchanges} is 0 for a
     * fresh connection, 1 for one that already answered (reused).
     */
    void attach(Channel channel, ByteCounter counter, String authority, Policy policy, @Nullable PinResult pin,
                int exchanges) {
        this.channel = channel;
        this.counter = counter;
        this.authority = authority;
        this.policy = policy;
        this.pin = pin;
        this.exchanges = exchanges;
        this.failure = null;
        this.handshakeFailure = null;
    }

    /** Takes a connection parked after an exchange: a reused one (exchanges 1), no failure yet. */
    void attachParked(UpstreamPool.Parked parked) {
        channel = parked.channel();
        counter = parked.counter();
        authority = parked.authority();
        policy = parked.policy();
        pin = parked.pin();
        failure = null;
        exchanges = 1;
    }

    /**
     * Lets go of the channel (with its counter, authority and policy; the rest stays) and returns it,
     * or null when there was none; the caller owns it then.
     */
    @Nullable Channel detach() {
        Channel old = channel;
        if (old != null) {
            channel = null;
            counter = null;
            authority = null;
            policy = null;
        }
        return old;
    }

    /**
     * Closes the channel, if any, once {@link #detach}ed (the leg is left without one); the leg is no longer
     * an h2 stream either way.
     */
    void close() {
        stream = false;
        Channel old = detach();
        if (old != null) {
            old.close();
        }
    }

    /** {@link #detach}es the channel as an idle connection for an {@link UpstreamPool}; requires one. */
    UpstreamPool.Parked park() {
        UpstreamPool.Parked parked = new UpstreamPool.Parked(channel, counter, authority, policy, pin);
        detach();
        return parked;
    }
}
