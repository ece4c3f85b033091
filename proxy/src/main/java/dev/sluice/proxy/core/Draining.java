package dev.sluice.proxy.core;

/**
 * User event fired into every downstream connection when Sluice starts a graceful shutdown: a
 * connection with no exchange in flight closes now; one with an exchange closes when it completes;
 * tunnels run on until they end or the shutdown deadline passes.
 */
public final class Draining {

    /** The one instance. */
    public static final Draining INSTANCE = new Draining();

    private Draining() {
    }
}
