package dev.sluice.rules.policy;

import java.util.List;

/**
 * The checks of {@code credentials.<name>.inject.sigv4} and {@code sigv4_unsigned_payload} that
 * {@link PolicyLoader} reports with the inject block's file:line (docs/policy.md).
 */
final class CredentialSigV4Keys {

    private CredentialSigV4Keys() {
    }

    /**
     * Returns what is wrong with these inject keys together, or null.
     *
     * @param sigv4 {@code inject.sigv4}
     * @param unsignedPayload {@code inject.sigv4_unsigned_payload}
     * @param headers {@code inject.header}, lower case
     * @param basic {@code inject.basic}
     */
    static String problem(boolean sigv4, boolean unsignedPayload, List<String> headers, boolean basic) {
        if (unsignedPayload && !sigv4) {
            return "sigv4_unsigned_payload without sigv4 (expected: sigv4: true, or no sigv4_unsigned_payload)";
        }
        if (sigv4 && (basic || headers.contains("authorization"))) {
            return "sigv4 with " + (basic ? "basic" : "header authorization")
                    + " (expected: one; sigv4 signs the Authorization field again with the key pair)";
        }
        return null;
    }
}
