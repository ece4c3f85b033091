package dev.sluice.rules.redact;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Scans request header values of an inspected request, except the provider's own authentication
 * headers, which carry the key the request is meant to carry. Thread-safe (stateless apart from the
 * immutable detector set).
 */
public final class HeaderScanner {

    /**
     * The authentication headers of the LLM providers Sluice inspects, lowercase: {@code authorization}
     * (OpenAI, OpenRouter, Groq, Azure OpenAI with Entra ID: {@code Bearer}), {@code x-api-key}
     * (Anthropic), {@code x-goog-api-key} (Google Gemini), {@code api-key} (Azure OpenAI).
     */
    public static final Set<String> PROVIDER_AUTH_HEADERS = Set.of("authorization", "x-api-key", "x-goog-api-key", "api-key");

    private final DetectorSet detectors;
    private final Set<String> skipped;

    /**
     * @param skippedNames header names not scanned (compared case-insensitively), e.g.
     *                     {@link #PROVIDER_AUTH_HEADERS}
     */
    public HeaderScanner(DetectorSet detectors, Set<String> skippedNames) {
        this.detectors = Objects.requireNonNull(detectors, "detectors");
        this.skipped = skippedNames.stream().map(n -> n.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
    }

    /**
     * The result of a scan.
     *
     * @param headers the headers in their order, values with secrets replaced by
     *                {@code [REDACTED:<detector-id>]}
     * @param findings detector id → count; empty when nothing was found
     */
    public record Result(List<Map.Entry<String, String>> headers, Map<String, Long> findings) {
        public Result {
            headers = List.copyOf(headers);
            findings = Collections.unmodifiableMap(new TreeMap<>(findings));
        }

        /** Answers whether any detector matched. */
        public boolean hasFindings() {
            return !findings.isEmpty();
        }
    }

    /**
     * Scans each header value (read as ISO-8859-1, as HTTP field values are) except those of skipped
     * names.
     */
    public Result scan(List<Map.Entry<String, String>> headers) {
        List<Map.Entry<String, String>> out = new ArrayList<>(headers.size());
        Map<String, Long> findings = new TreeMap<>();
        for (Map.Entry<String, String> h : headers) {
            String name = h.getKey();
            String value = h.getValue();
            if (value == null || value.isEmpty() || skipped.contains(name.toLowerCase(Locale.ROOT))) {
                out.add(Map.entry(name, value == null ? "" : value));
                continue;
            }
            byte[] bytes = value.getBytes(StandardCharsets.ISO_8859_1);
            StreamingRedactor r = detectors.newRedactor(BodyFormat.PLAIN, RedactionAction.REDACT, bytes.length);
            byte[] a;
            try {
                a = r.feed(bytes);
            } catch (BodyTooLargeException e) {
                throw new AssertionError("limit is the value's own length", e);
            }
            byte[] b = r.finish();
            if (r.hasFindings()) {
                r.findings().forEach((k, v) -> findings.merge(k, v, Long::sum));
                String redacted = new String(a, StandardCharsets.ISO_8859_1) + new String(b, StandardCharsets.ISO_8859_1);
                out.add(Map.entry(name, redacted));
            } else {
                out.add(Map.entry(name, value));
            }
        }
        return new Result(out, findings);
    }

    /** A request-target after {@link #scanTarget}: the target to use and what was found in it (detector id → count). */
    public record TargetResult(String target, Map<String, Long> findings) {

        /** Whether a credential was found. */
        public boolean hasFindings() {
            return !findings.isEmpty();
        }
    }

    private static final java.util.regex.Pattern MARKER = java.util.regex.Pattern.compile("\\[REDACTED:([a-z0-9-]+)\\]");

    /**
     * Query parameters that carry the provider's own authentication, skipped like
     * {@link #PROVIDER_AUTH_HEADERS}: Google's {@code key}, AWS SigV4 presigned URLs
     * ({@code X-Amz-Credential}, {@code X-Amz-Signature}, {@code X-Amz-Security-Token}) and Azure SAS
     * {@code sig}. Compared case-insensitively, after percent-decoding the name.
     */
    public static final Set<String> PROVIDER_AUTH_PARAMETERS = Set.of("key", "x-amz-credential", "x-amz-signature",
            "x-amz-security-token", "sig");

    /**
     * Scans a request-target (path and query, RFC 9112 section 3.2) for credentials, as a header value is
     * scanned: the path, then each query parameter except those named in {@link #PROVIDER_AUTH_PARAMETERS}.
     * A credential is replaced by its marker with the marker's brackets and colon percent-encoded
     * ({@code %5BREDACTED%3Agithub-pat%5D}), so that the target stays a valid URI (RFC 3986 section 2.2).
     */
    public TargetResult scanTarget(String target) {
        if (target == null || target.isEmpty()) {
            return new TargetResult(target, Map.of());
        }
        int q = target.indexOf('?');
        List<String> parts = new ArrayList<>();
        parts.add(q < 0 ? target : target.substring(0, q));
        if (q >= 0) {
            for (String param : target.substring(q + 1).split("&", -1)) {
                parts.add(param);
            }
        }
        Map<String, Long> findings = new TreeMap<>();
        StringBuilder out = new StringBuilder(target.length());
        for (int i = 0; i < parts.size(); i++) {
            String part = parts.get(i);
            if (i == 1) {
                out.append('?');
            } else if (i > 1) {
                out.append('&');
            }
            if (i > 0 && skippedParameter(part)) {
                out.append(part);
                continue;
            }
            Result r = scan(List.of(Map.entry("request-target", part)));
            if (r.hasFindings()) {
                r.findings().forEach((k, v) -> findings.merge(k, v, Long::sum));
                out.append(MARKER.matcher(r.headers().get(0).getValue()).replaceAll("%5BREDACTED%3A$1%5D"));
            } else {
                out.append(part);
            }
        }
        return findings.isEmpty() ? new TargetResult(target, Map.of()) : new TargetResult(out.toString(), findings);
    }

    private static boolean skippedParameter(String param) {
        int eq = param.indexOf('=');
        String name = eq < 0 ? param : param.substring(0, eq);
        try {
            name = java.net.URLDecoder.decode(name, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return false;
        }
        return eq >= 0 && PROVIDER_AUTH_PARAMETERS.contains(name.toLowerCase(Locale.ROOT));
    }
}
