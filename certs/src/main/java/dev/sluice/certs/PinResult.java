package dev.sluice.certs;

/**
 * The outcome of pin checking for one upstream handshake whose chain passed PKIX validation and
 * hostname verification; {@link #label()} is the audit record's {@code pin} value.
 */
public enum PinResult {
    /** The host has pins and an SPKI of the validated chain matches one. */
    OK("ok"),
    /** The host has pins and no SPKI of the validated chain matches any (rejected unless in report mode). */
    MISMATCH("mismatch"),
    /** The host is trust-on-first-use and had no record: this chain's pins were recorded. */
    RECORDED("recorded"),
    /** The host has no pins; only PKIX validation and hostname verification applied. */
    NONE("none");

    private final String label;

    PinResult(String label) {
        this.label = label;
    }

    /** Returns the lowercase word used in audit records: {@code ok|mismatch|recorded|none}. */
    public String label() {
        return label;
    }
}
