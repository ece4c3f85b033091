package dev.sluice.proxy.forward;

import dev.sluice.proxy.explicit.ForwardRequest;
import dev.sluice.rules.decision.Decision;

/**
 * Messages a phase in front of the forwarder sends it to end an exchange with a refusal.
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
     */
    public record Refuse(ForwardRequest request, Decision decision, String detail) {
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
     * The request's own framing broke mid-body (a malformed chunked body, RFC 9112 section 7.1): nothing
     * more of it will be read. The forwarder closes the upstream connection if one is open (the origin
     * sees an incomplete request, never its end), answers the refusal when no response has started,
     * and closes the downstream connection.
     *
     * @param decision the refusal (400 {@code ambiguous_framing})
     * @param detail a short safe note for the audit record
     */
    public record RequestBroken(Decision decision, String detail) {
    }
}
