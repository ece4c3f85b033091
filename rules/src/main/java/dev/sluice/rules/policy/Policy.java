package dev.sluice.rules.policy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * One immutable policy snapshot, as loaded from a policy file (design.md "Policy file"). Swapped
 * atomically as a whole on reload; never mutated.
 *
 * @param mode enforce or report
 * @param extensions by name, the {@code default} extension included when present
 * @param globalDeny deny rules that apply to every extension
 * @param network the {@code network} section
 * @param listen the {@code listen} section
 * @param limits the {@code limits} section
 * @param audit the {@code audit} section: file, rotation size and retention
 * @param source where it came from (a file path, or {@code embedded:default-policy.yaml})
 * @param sha256Hex the SHA-256 of the file's bytes, lowercase hex
 * @param inspect hosts whose TLS Sluice terminates, by canonical host pattern ({@code inspect} section)
 * @param tls the {@code tls} section
 * @param redaction the {@code redaction} section (defaults when absent: redact with every built-in detector)
 * @param upstreamProxy the {@code upstream_proxy} section ({@link UpstreamProxy#NONE} when absent)
 * @param includes the fragments merged in ({@code include}, recursively), absolute, in the order read;
 *                 when non-empty, {@code sha256Hex} is {@link PolicyLoader#fingerprint} over the file and them
 * @param approvals the {@code approvals} section, or null when requests that miss are simply refused
 * @param credentials the top-level {@code credentials} map, by name (no values: docs/credentials.md)
 * @param redFlags the {@code red_flags} section, or null when no red-flag rule runs
 * @param alerts the {@code alerts} section, or null when no alert is sent
 * @param capture the {@code capture} section, or null when nothing is captured (the default)
 */
public record Policy(Mode mode, Map<String, Extension> extensions, List<Rule> globalDeny, NetworkSettings network,
                     ListenSettings listen, Limits limits, AuditSettings audit, String source, String sha256Hex,
                     Map<String, InspectedHost> inspect, TlsSettings tls, RedactionSettings redaction,
                     UpstreamProxy upstreamProxy, List<Path> includes, @Nullable ApprovalSettings approvals,
                     Map<String, Credential> credentials, dev.sluice.rules.redflag.@Nullable RedFlagSettings redFlags,
                     @Nullable AlertSettings alerts, @Nullable CaptureSettings capture) {

    public Policy {
        credentials = credentials == null ? Map.of() : java.util.Collections.unmodifiableMap(
                new java.util.LinkedHashMap<>(credentials));
        upstreamProxy = upstreamProxy == null ? UpstreamProxy.NONE : upstreamProxy;
        includes = List.copyOf(includes);
        extensions = Map.copyOf(extensions);
        inspect = Map.copyOf(inspect);
        globalDeny = RuleList.copyOf(globalDeny);
    }

    /** A policy without {@code capture}. */
    public Policy(Mode mode, Map<String, Extension> extensions, List<Rule> globalDeny, NetworkSettings network,
                  ListenSettings listen, Limits limits, AuditSettings audit, String source, String sha256Hex,
                  Map<String, InspectedHost> inspect, TlsSettings tls, RedactionSettings redaction,
                  UpstreamProxy upstreamProxy, List<Path> includes, ApprovalSettings approvals,
                  Map<String, Credential> credentials, dev.sluice.rules.redflag.RedFlagSettings redFlags,
                  AlertSettings alerts) {
        this(mode, extensions, globalDeny, network, listen, limits, audit, source, sha256Hex, inspect, tls, redaction,
                upstreamProxy, includes, approvals, credentials, redFlags, alerts, null);
    }

    /** A policy with credentials but without {@code red_flags} or {@code alerts}. */
    public Policy(Mode mode, Map<String, Extension> extensions, List<Rule> globalDeny, NetworkSettings network,
                  ListenSettings listen, Limits limits, AuditSettings audit, String source, String sha256Hex,
                  Map<String, InspectedHost> inspect, TlsSettings tls, RedactionSettings redaction,
                  UpstreamProxy upstreamProxy, List<Path> includes, ApprovalSettings approvals,
                  Map<String, Credential> credentials) {
        this(mode, extensions, globalDeny, network, listen, limits, audit, source, sha256Hex, inspect, tls, redaction,
                upstreamProxy, includes, approvals, credentials, null, null, null);
    }

    /** A policy without credentials, {@code red_flags} or {@code alerts}. */
    public Policy(Mode mode, Map<String, Extension> extensions, List<Rule> globalDeny, NetworkSettings network,
                  ListenSettings listen, Limits limits, AuditSettings audit, String source, String sha256Hex,
                  Map<String, InspectedHost> inspect, TlsSettings tls, RedactionSettings redaction,
                  UpstreamProxy upstreamProxy, List<Path> includes, ApprovalSettings approvals) {
        this(mode, extensions, globalDeny, network, listen, limits, audit, source, sha256Hex, inspect, tls, redaction,
                upstreamProxy, includes, approvals, Map.of(), null, null, null);
    }

    /** A policy without an {@code upstream_proxy} section, fragments or approvals. */
    public Policy(Mode mode, Map<String, Extension> extensions, List<Rule> globalDeny, NetworkSettings network,
                  ListenSettings listen, Limits limits, AuditSettings audit, String source, String sha256Hex,
                  Map<String, InspectedHost> inspect, TlsSettings tls, RedactionSettings redaction) {
        this(mode, extensions, globalDeny, network, listen, limits, audit, source, sha256Hex, inspect, tls, redaction,
                UpstreamProxy.NONE, List.of(), null);
    }

    /**
     * Returns the {@code inspect} entry for {@code host} (canonical): an exact entry first, then the
     * {@code *.suffix} entry of the nearest parent domain; empty when Sluice does not terminate TLS
     * for that host.
     */
    public Optional<InspectedHost> inspected(String host) {
        InspectedHost exact = inspect.get(host);
        if (exact != null || inspect.isEmpty()) {
            return Optional.ofNullable(exact);
        }
        for (int dot = host.indexOf('.'); dot >= 0; dot = host.indexOf('.', dot + 1)) {
            InspectedHost wildcard = inspect.get("*" + host.substring(dot));
            if (wildcard != null) {
                return Optional.of(wildcard);
            }
        }
        return Optional.empty();
    }

    /**
     * Returns {@code audit().path()}: the audit log file, a relative path to be resolved against the
     * data dir by the caller; null only when {@code audit} is null (hand-built test policies).
     */
    public Path auditPath() {
        return audit == null ? null : audit.path();
    }

    /** Returns the extension named {@code name}. */
    public Optional<Extension> extension(String name) {
        return Optional.ofNullable(extensions.get(name));
    }

    /** Returns the {@code default} extension, for unidentified clients, when the policy has one. */
    public Optional<Extension> defaultExtension() {
        return extension(Extension.DEFAULT);
    }

    /**
     * Authenticates explicit-mode credentials (Proxy-Authorization Basic {@code name:token}, RFC 7617):
     * the SHA-256 of {@code token} is compared with the extension's {@code token_sha256} in constant
     * time ({@link java.security.MessageDigest#isEqual}).
     *
     * @return the extension, or empty when the name is unknown, has no token, or the token is wrong
     */
    public Optional<Extension> authenticate(@Nullable String name, @Nullable String token) {
        if (name == null || token == null) {
            return Optional.empty();
        }
        Extension extension = extensions.get(name);
        if (extension == null) {
            return Optional.empty();
        }
        byte[] expected = extension.tokenSha256();
        if (expected == null) {
            return Optional.empty();
        }
        byte[] actual = sha256(token.getBytes(StandardCharsets.UTF_8));
        return MessageDigest.isEqual(expected, actual) ? Optional.of(extension) : Optional.empty();
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }
}
