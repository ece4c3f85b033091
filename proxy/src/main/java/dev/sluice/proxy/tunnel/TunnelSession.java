package dev.sluice.proxy.tunnel;

import dev.sluice.proxy.audit.AuditEvent;

/**
 * The shared state of one CONNECT tunnel's two relays: which directions have ended, and the one audit
 * record, emitted when both channels have closed (so its byte counts are final). Used on one event
 * loop only.
 */
final class TunnelSession {

    private final AuditEvent audit;
    private int closed;
    private boolean downstreamInputShut;
    private boolean upstreamInputShut;

    TunnelSession(AuditEvent audit) {
        this.audit = audit;
    }

    /**
     * Records that one side sent FIN (idempotent per side: a repeated event for the same side counts
     * once); returns true when both sides have.
     */
    boolean inputShutdown(boolean downstreamSide) {
        if (downstreamSide) {
            downstreamInputShut = true;
        } else {
            upstreamInputShut = true;
        }
        return downstreamInputShut && upstreamInputShut;
    }

    /** Records an error, once (the first error is the one that ended the tunnel). */
    void error(String message) {
        if (audit.errorOrNull() == null) {
            audit.error(message);
        }
    }

    /** Records that one channel closed; the audit record is written when both have. */
    void channelClosed() {
        if (++closed == 2) {
            audit.emit();
        }
    }
}
