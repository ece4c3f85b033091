package dev.sluice.rules.redact;

import java.util.Objects;
import java.util.Set;

/**
 * How one request body sent to an inspected host is scanned, and whether it may be rewritten.
 *
 * <p>Bodies are <em>text</em> or <em>binary</em>, by their {@code Content-Type} (RFC 9110 section 8.3,
 * media type only, parameters ignored, case-insensitive):
 * <ul>
 *   <li>text: any {@code text/*} type (SSE's {@code text/event-stream} included), the JSON types of
 *       {@link BodyFormat#forContentType} ({@code application/json}, {@code +json}, {@code application/x-ndjson}),
 *       the form types {@code application/x-www-form-urlencoded} and {@code multipart/form-data} — and a body
 *       with <strong>no</strong> {@code Content-Type} (or an empty one): see below;</li>
 *   <li>binary: every other type, e.g. {@code application/octet-stream}, {@code application/x-git-receive-pack-request},
 *       {@code image/png}, {@code application/zip}; also a value that is not a media type at all.</li>
 * </ul>
 * A text body is scanned in its {@link BodyFormat} and handled by the configured action
 * ({@code redaction.action}, after {@link SigV4#plan}). A binary body is scanned as {@link BodyFormat#PLAIN} and
 * <strong>never rewritten</strong> (a replaced run of bytes corrupts a pack, an archive or an image): the
 * redactor runs with {@code redaction.binary} — {@link RedactionAction#BLOCK} (default) or
 * {@link RedactionAction#REPORT} — so its bytes pass unchanged or the request is refused.
 *
 * <p>Why a missing type counts as text: the content is not sniffed (a guess that a body "looks binary"
 * is exactly what a leaking client can steer), so one of the two classes must be assumed. Clients
 * that send real binary data label it (git, uploads, gRPC-web); untyped bodies are typically scripts
 * posting text. As text it is scanned and its secrets are replaced under {@code action: redact}; as
 * binary a policy with {@code binary: report} would let a secret in it pass.
 *
 * @param format how the redactor reads the body
 * @param action the redactor's action: for text the configured one, for binary BLOCK or REPORT
 * @param binary whether the body is binary (never rewritten)
 */
public record BodyPlan(BodyFormat format, RedactionAction action, boolean binary) {

    private static final Set<String> TEXT_TYPES = Set.of("application/x-www-form-urlencoded",
            "multipart/form-data");

    public BodyPlan {
        Objects.requireNonNull(format, "format");
        Objects.requireNonNull(action, "action");
        if (binary && action == RedactionAction.REDACT) {
            throw new IllegalArgumentException("action: redact (expected: block or report for a binary body)");
        }
    }

    /**
     * Plans the scan of a body.
     *
     * @param contentType the request's {@code Content-Type} value, or null when it has none
     * @param textAction the action for text bodies (the configured one, after {@link SigV4#plan})
     * @param binaryAction {@code redaction.binary}: BLOCK or REPORT
     * @throws IllegalArgumentException when {@code binaryAction} is REDACT
     */
    public static BodyPlan of(String contentType, RedactionAction textAction, RedactionAction binaryAction) {
        Objects.requireNonNull(textAction, "textAction");
        Objects.requireNonNull(binaryAction, "binaryAction");
        if (isBinary(contentType)) {
            return new BodyPlan(BodyFormat.PLAIN, binaryAction, true);
        }
        return new BodyPlan(BodyFormat.forContentType(contentType), textAction, false);
    }

    /** Answers whether a body of this {@code Content-Type} (null: none) is binary; see the class comment. */
    public static boolean isBinary(String contentType) {
        String t = BodyFormat.mediaType(contentType);
        if (t == null || t.isEmpty()) {
            return false;
        }
        return !(t.startsWith("text/") || TEXT_TYPES.contains(t) || BodyFormat.forContentType(t) == BodyFormat.JSON);
    }

    /** Answers whether the redactor's output may differ from its input (REDACT on a text body). */
    public boolean mayRewrite() {
        return action == RedactionAction.REDACT;
    }
}
