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
     * Scans a request-target (path and query, RFC 9112 section 3.2) for credentials, as a header value is
     * scanned. A credential is replaced by its marker with the marker's brackets and colon
     * percent-encoded ({@code %5BREDACTED%3Agithub-pat%5D}), so that the target stays a valid URI
     * (RFC 3986 section 2.2). Names are never skipped here.
     */
    public TargetResult scanTarget(String target) {
        if (target == null || target.isEmpty()) {
            return new TargetResult(target, Map.of());
        }
        Result r = scan(List.of(Map.entry("request-target", target)));
        if (!r.hasFindings()) {
            return new TargetResult(target, Map.of());
        }
        String redacted = MARKER.matcher(r.headers().get(0).getValue()).replaceAll("%5BREDACTED%3A$1%5D");
        return new TargetResult(redacted, r.findings());
    }
}
