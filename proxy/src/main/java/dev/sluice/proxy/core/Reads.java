package dev.sluice.proxy.core;

import io.netty.channel.Channel;
import io.netty.channel.socket.DuplexChannel;

/**
 * Turns reading on and off for backpressure. Reading is never turned back on for a channel whose
 * input was shut down (a half-closed peer): there is nothing left to read, and the native transport
 * refuses to re-arm such a socket.
 */
public final class Reads {

    private Reads() {
    }

    /** Sets autoRead on {@code channel}, unless {@code on} is true and its input is already shut down. */
    public static void setAutoRead(Channel channel, boolean on) {
        if (on && channel instanceof DuplexChannel duplex && duplex.isInputShutdown()) {
            return;
        }
        if (channel.config().isAutoRead() != on) {
            channel.config().setAutoRead(on);
        }
    }
}
