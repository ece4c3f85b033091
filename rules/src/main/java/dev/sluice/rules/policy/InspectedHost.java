package dev.sluice.rules.policy;

import java.util.List;
import java.util.Objects;

/**
 * One entry of the policy's {@code inspect} section: a host whose TLS Sluice terminates (the LLM
 * provider APIs), with its upstream SPKI pins.
 *
 * @param host canonical host name, or {@code *.suffix} for every subdomain
 * @param pinKind how the upstream certificate chain is pinned
 * @param pins for {@link PinKind#EXPLICIT}: the {@code sha256/<base64>} SPKI pins (RFC 7469 format), any
 *             one of which must appear in the validated chain; empty otherwise
 * @param pinReportOnly {@code pin_mode: report}: a mismatch is logged and counted, the request passes
 * @param redact whether request bodies to this host go through the redactor
 * @param websocket what a WebSocket upgrade to this host gets ({@code websocket} key; default
 *                  {@link WebSocketMode#defaultFor(boolean)} of {@code redact})
 */
public record InspectedHost(String host, PinKind pinKind, List<String> pins, boolean pinReportOnly, boolean redact,
                            WebSocketMode websocket) {

    /** An entry with the default WebSocket mode for {@code redact}. */
    public InspectedHost(String host, PinKind pinKind, List<String> pins, boolean pinReportOnly, boolean redact) {
        this(host, pinKind, pins, pinReportOnly, redact, WebSocketMode.defaultFor(redact));
    }

    /** How an inspected host's upstream chain is pinned. */
    public enum PinKind {
        /** Normal PKIX validation only. */
        NONE,
        /** Trust on first use: the first validated chain's intermediate and root SPKIs are recorded, then enforced. */
        TOFU,
        /** The pins written in the policy. */
        EXPLICIT
    }

    public InspectedHost {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(pinKind, "pinKind");
        Objects.requireNonNull(websocket, "websocket");
        pins = List.copyOf(pins);
    }
}
