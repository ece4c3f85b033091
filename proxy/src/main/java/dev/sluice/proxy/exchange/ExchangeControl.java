package dev.sluice.proxy.exchange;

import dev.sluice.rules.decision.Decision;

/**
 * Messages a phase in front of the forwarder sends it to end an exchange early: with a refusal, or
 * because the request can no longer complete.
 */
public final class ExchangeControl {

    private ExchangeControl() {
    }

    /**
     * Refuse {@code request} before anything of it went upstream (its body, if any, is dropped as it
     * arrives).
     *
     * @param request the exchange to refuse
     * @param decision the refusal (a deny with its reason and rule)
     * @param detail a short safe note for the audit record, or null
     * @param bodyAsSent true when the body that follows this message (or the content of a full request)
     *     is the one that would have gone upstream: read by the redaction phase (redacted where
     *     {@code redact: true} asks for it) and not yet through the credential phase, so that a capture
     *     may keep it; false when the refusal came before the body was inspected (it follows raw)
     */
    public record Refuse(ForwardRequest request, Decision decision, String detail, boolean bodyAsSent) {

        /** A refusal whose following body is not known to be as sent ({@code bodyAsSent} false). */
        public Refuse(ForwardRequest request, Decision decision, String detail) {
            this(request, decision, detail, false);
        }
    }

    /**
     * Abort the exchange in progress: close the upstream connection (the origin sees an incomplete
     * request and no byte that was held back) and answer the refusal when no response has started.
     *
     * @param decision the refusal
     * @param detail a short safe note for the audit record, or null
     */
    public record Abort(Decision decision, String detail) {
    }

    /**
     * The client half-closed (TCP FIN, or a TLS close_notify inside an intercepted tunnel) while the
     * request body was still expected: it can never complete. End the exchange at once: close the
     * upstream connection (never reused), write the record with {@code error} set to {@link #error()}
     * and the bytes counted so far, send the client nothing more than what is already written, and close
     * the downstream connection (which frees its slot under {@code limits.max_connections_per_extension}).
     * A refused exchange whose body was being dropped (lingering close) just closes: its record is
     * already written.
     */
    public record ClientClosedMidBody() {
        /** The {@code error} of the exchange's record. */
        public static final String ERROR = "client_closed_mid_body";

        /** Returns {@link #ERROR}. */
        public String error() {
            return ERROR;
        }
    }
}
