package dev.sluice.rules.credential;

import dev.sluice.rules.policy.Credential;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Recognises an AWS Signature Version 4 {@code Authorization} whose access key id is an extension's
 * placeholder for a credential with {@code inject.sigv4} (docs/credentials.md, "AWS SigV4"), and decides
 * whether Sluice may sign the request again with the real key pair. The header's form is
 * {@code AWS4-HMAC-SHA256 Credential=<key id>/<yyyymmdd>/<region>/<service>/aws4_request,
 * SignedHeaders=<h1;h2...>, Signature=<hex>} (AWS IAM user guide, "Elements of an AWS API request
 * signature"). Pure: no signing here (the proxy signs with the AWS SDK).
 */
public final class SigV4Placeholder {

    private static final Pattern AUTH = Pattern.compile(
            "\\s*AWS4-HMAC-SHA256\\s+Credential=([^/,\\s]+)/(\\d{8})/([^/,\\s]+)/([^/,\\s]+)/aws4_request\\s*,"
                    + "\\s*SignedHeaders=([a-z0-9;_.-]+)\\s*,\\s*Signature=[0-9a-f]{64}\\s*",
            Pattern.CASE_INSENSITIVE);

    /** {@code x-amz-content-sha256} of a request whose body is not signed. */
    public static final String UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";

    private SigV4Placeholder() {
    }

    /**
     * A SigV4 {@code Authorization} that carries a placeholder as its access key id.
     *
     * @param grant the extension's grant the placeholder is
     * @param date the scope's date, {@code yyyymmdd}
     * @param region the scope's region, e.g. {@code us-east-1}
     * @param service the scope's service signing name, e.g. {@code bedrock}
     * @param signedHeaders the signed header names, lower case, in the client's order
     */
    public record Signed(PlaceholderTable.Grant grant, String date, String region, String service,
                         List<String> signedHeaders) {
        public Signed {
            signedHeaders = List.copyOf(signedHeaders);
        }
    }

    /** What to do with a request. */
    public enum Verdict {
        /** Not a SigV4 request with a placeholder this phase may sign for: decide it as any other. */
        NONE,
        /** Sign it again with the real key pair ({@link Found#signed()}). */
        SIGN,
        /** Refused: the payload is not signed ({@code UNSIGNED-PAYLOAD} without the policy's leave, or streaming). */
        REFUSE
    }

    /**
     * The decision for one request head.
     *
     * @param verdict what to do
     * @param signed the parsed header (SIGN and REFUSE), or null
     * @param detail why (REFUSE), or null
     */
    public record Found(Verdict verdict, Signed signed, String detail) {
    }

    /**
     * Decides one request head.
     *
     * @param table the placeholders of the running policy
     * @param extension the requesting extension, or null
     * @param intercepted whether the request goes on an intercepted, certificate-verified leg
     * @param host the canonical target host
     * @param port the target port
     * @param uri the origin-form request-target
     * @param headers the request's header fields, names in any case
     */
    public static Found decide(PlaceholderTable table, String extension, boolean intercepted, String host, int port,
                               String uri, List<Map.Entry<String, String>> headers) {
        String authorization = null;
        String contentSha = null;
        int authorizations = 0;
        for (Map.Entry<String, String> h : headers) {
            if (h.getKey().equalsIgnoreCase("authorization")) {
                authorization = h.getValue();
                authorizations++;
            } else if (h.getKey().equalsIgnoreCase("x-amz-content-sha256")) {
                contentSha = h.getValue().strip();
            }
        }
        if (!intercepted || authorizations != 1 || extension == null) {
            return new Found(Verdict.NONE, null, null);
        }
        Matcher m = AUTH.matcher(authorization);
        if (!m.matches()) {
            return new Found(Verdict.NONE, null, null);
        }
        PlaceholderTable.Grant grant = table.grants(extension).values().stream()
                .filter(g -> g.placeholder().equals(m.group(1))).findFirst().orElse(null);
        if (grant == null) {
            return new Found(Verdict.NONE, null, null);
        }
        Credential.Inject inject = grant.credential().inject();
        if (!inject.sigv4() || !inject.covers(host, port, uri)) {
            return new Found(Verdict.NONE, null, null); // refused as a placeholder where it may not be
        }
        List<String> signedHeaders = new ArrayList<>();
        for (String name : m.group(5).toLowerCase(Locale.ROOT).split(";")) {
            signedHeaders.add(name);
        }
        Signed signed = new Signed(grant, m.group(2), m.group(3), m.group(4), signedHeaders);
        if (contentSha != null && contentSha.toUpperCase(Locale.ROOT).startsWith("STREAMING-")) {
            return new Found(Verdict.REFUSE, signed, "streaming SigV4 payload (" + shorten(contentSha)
                    + ") is not signed again by Sluice; send the body whole");
        }
        if (contentSha != null && contentSha.equalsIgnoreCase(UNSIGNED_PAYLOAD) && !inject.sigv4UnsignedPayload()) {
            return new Found(Verdict.REFUSE, signed, "SigV4 UNSIGNED-PAYLOAD is not allowed for credential "
                    + grant.credential().name() + " (inject.sigv4_unsigned_payload)");
        }
        return new Found(Verdict.SIGN, signed, null);
    }

    private static String shorten(String s) {
        String t = s.length() > 48 ? s.substring(0, 48) + "..." : s;
        return t.replaceAll("[^\\x20-\\x7e]", "?");
    }
}
