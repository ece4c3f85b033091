package dev.sluice.rules.policy;

import java.util.Locale;

/**
 * What Sluice does with a WebSocket upgrade (RFC 6455) to an intercepted host: the policy key
 * {@code inspect.<host>.websocket}. Without the key, {@link #INSPECT} where the host has
 * {@code redact: true}, else {@link #RELAY}.
 */
public enum WebSocketMode {
    /** Answer the upgrade 403 {@code websocket_refused}, so the client falls back to HTTP. */
    REFUSE,
    /** After the origin's 101, relay the frames unparsed (counted and audited, {@code websocket.mode: relay}). */
    RELAY,
    /** Parse the frames on both legs and put client text messages through the redactor. */
    INSPECT;

    /** Returns the policy spelling: {@code refuse}, {@code relay} or {@code inspect}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Returns the default for a host with the given {@code redact} setting. */
    public static WebSocketMode defaultFor(boolean redact) {
        return redact ? INSPECT : RELAY;
    }
}
