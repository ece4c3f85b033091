package dev.sluice.proxy.forward;

import dev.sluice.certs.PinMismatchException;
import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import javax.net.ssl.SSLException;

/** Maps an upstream failure to the refusal the client is told: a pin, TLS, or anything else (502). */
final class UpstreamFailures {

    private UpstreamFailures() {
    }

    /**
     * Returns 502 {@code pin_mismatch} when a {@link PinMismatchException} is in the cause chain, else 502
     * {@code upstream_tls_failed} for any {@link SSLException} in it, else 502 {@code upstream_connect_failed}.
     *
     * @param cause the failure, or null when the connection just went away
     */
    static Decision classify(Throwable cause) {
        if (cause != null && PinMismatchException.find(cause).isPresent()) {
            return Decision.deny(Reason.PIN_MISMATCH, BuiltinRules.PINS);
        }
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SSLException) {
                return Decision.deny(Reason.UPSTREAM_TLS_FAILED, BuiltinRules.UPSTREAM_TLS);
            }
        }
        return Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.UPSTREAM);
    }
}
