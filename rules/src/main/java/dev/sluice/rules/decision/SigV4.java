package dev.sluice.rules.decision;

import dev.sluice.rules.redact.RedactionAction;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Recognises requests signed with AWS Signature Version 4, whose signature covers the body (through
 * {@code X-Amz-Content-Sha256} or the payload hash in the canonical request): a rewritten body would be
 * refused by AWS, so a credential in such a body blocks the request instead (reason
 * {@code signed_body}) unless the action is report.
 *
 * <p>A request is treated as SigV4-signed when any of these holds (AWS General Reference, "Signing AWS
 * API requests", https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html, and "Authenticating
 * requests: using query parameters"):
 * <ul>
 *   <li>an {@code Authorization} value starts with {@code AWS4-HMAC-SHA256} (or {@code AWS4-ECDSA-P256-SHA256},
 *       SigV4a), case-insensitively;</li>
 *   <li>an {@code X-Amz-Content-Sha256} header is present;</li>
 *   <li>the query has an {@code X-Amz-Signature} parameter (presigned URL), name compared
 *       case-insensitively.</li>
 * </ul>
 */
public final class SigV4 {

    private SigV4() {
    }

    /**
     * What to do with matches in one request, and the reason to give when blocking.
     *
     * @param action the effective action
     * @param blockReason the reason of a 403 when {@code action} is BLOCK: {@link Reason#SIGNED_BODY} when
     *                    a REDACT was turned into a BLOCK because of the signature, else
     *                    {@link Reason#CREDENTIAL_DETECTED}
     */
    public record Plan(RedactionAction action, Reason blockReason) {
        public Plan {
            Objects.requireNonNull(action, "action");
            Objects.requireNonNull(blockReason, "blockReason");
        }
    }

    /**
     * Answers whether the request is SigV4-signed.
     *
     * @param headers request headers, names in any case
     * @param rawQuery the request-target's query without {@code ?}, or null
     */
    public static boolean isSigned(List<Map.Entry<String, String>> headers, @Nullable String rawQuery) {
        for (Map.Entry<String, String> h : headers) {
            String name = h.getKey();
            if (name.equalsIgnoreCase("x-amz-content-sha256")) {
                return true;
            }
            if (name.equalsIgnoreCase("authorization") && h.getValue() != null) {
                String v = h.getValue().stripLeading().toUpperCase(Locale.ROOT);
                if (v.startsWith("AWS4-HMAC-SHA256") || v.startsWith("AWS4-ECDSA-P256-SHA256")) {
                    return true;
                }
            }
        }
        if (rawQuery != null) {
            for (String param : rawQuery.split("&", -1)) {
                int eq = param.indexOf('=');
                String name = eq < 0 ? param : param.substring(0, eq);
                if (name.equalsIgnoreCase("X-Amz-Signature")) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * Returns the plan for a request: REDACT becomes BLOCK with {@link Reason#SIGNED_BODY} for a signed
     * request; BLOCK and REPORT are kept (BLOCK with {@link Reason#CREDENTIAL_DETECTED}).
     */
    public static Plan plan(RedactionAction configured, boolean signed) {
        Objects.requireNonNull(configured, "configured");
        if (signed && configured == RedactionAction.REDACT) {
            return new Plan(RedactionAction.BLOCK, Reason.SIGNED_BODY);
        }
        return new Plan(configured, Reason.CREDENTIAL_DETECTED);
    }
}
