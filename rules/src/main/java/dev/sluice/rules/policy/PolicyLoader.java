package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Loads policy files (YAML, version 1, design.md "Policy file"; the full reference is docs/policy.md)
 * into {@link Policy} snapshots. Nothing is partially applied: either a whole snapshot comes back or a
 * {@link PolicyException} with every error found, each with file:line:column (1-based).
 *
 * <p>Top-level keys: {@code version} (required, 1), {@code mode}, {@code extensions}, {@code groups},
 * {@code deny} (global deny rules for every extension), {@code network}, {@code listen}, {@code limits},
 * {@code audit}, {@code redaction}, {@code inspect}, {@code tls}. Unknown keys are errors listing the
 * expected keys. Design keys this
 * build does not implement yet: they are refused ("not supported by this build yet") rather than
 * accepted and ignored — a policy never loads with a part that would not be enforced.
 *
 * <p>Defaults: mode {@code enforce}; listen.proxy 127.0.0.1:3128, listen.admin 127.0.0.1:9901; limits
 * 15s, 120s, 32768 bytes, 32 MiB, 512, max_buffered_body 1 MiB, max_websocket_message 16 MiB; redaction.binary block; audit.path {@code audit.jsonl}, audit.max_file_bytes 64 MiB, audit.keep_files 10; no resolvers (the system's);
 * an allow rule without {@code ports} allows 80 and 443, a deny rule without {@code ports} denies every
 * port.
 */
public final class PolicyLoader {

    /** Source name of the embedded default policy. */
    public static final String EMBEDDED_SOURCE = "embedded:default-policy.yaml";

    /**
     * The top-level keys (an unknown-key error lists them in this order). Each section is read by the class
     * named beside it (package-private, this package); {@link #read} calls them in dependency order.
     *
     * <pre>
     *   version, mode        this class
     *   extensions, groups   {@link ExtensionsSection} (rule lists: {@link RulesSection})
     *   deny                 {@link RulesSection}
     *   network              {@link NetworkSection}
     *   listen               {@link ListenSection}
     *   limits               {@link LimitsSection} (token_budget included)
     *   audit                {@link AuditSection}
     *   inspect, tls         {@link InspectSection}
     *   redaction            {@link RedactionSection}
     *   upstream_proxy       {@link UpstreamProxySection}
     *   include              {@link IncludeSection} (fragments)
     *   approvals            {@link ApprovalsSection}
     *   credentials          {@link CredentialsSection}
     *   red_flags            {@link RedFlagsSection}
     *   alerts               {@link AlertsSection}
     *   capture              {@link CaptureSection}
     * </pre>
     *
     * Values, key checks and file:line:column errors: {@link PolicyCursor}.
     */
    private static final Set<String> TOP_KEYS = PolicyCursor.orderedSet("version", "mode", "extensions", "groups", "deny",
            "network", "listen", "limits", "audit", "inspect", "tls", "redaction", "upstream_proxy", "include",
            "approvals", "credentials", "red_flags", "alerts", "capture");
    private static final Set<String> TOP_UNSUPPORTED = PolicyCursor.orderedSet();

    /**
     * Returns every mapping's accepted keys, by the heading of its table in docs/policy.md (for the test
     * that keeps that table complete). Keys of nested mappings are written dotted ({@code auth.token_sha256}).
     */
    static java.util.Map<String, Set<String>> keyTables() {
        java.util.Map<String, Set<String>> tables = new java.util.LinkedHashMap<>();
        tables.put("Top level", TOP_KEYS);
        Set<String> extension = new LinkedHashSet<>(ExtensionsSection.EXTENSION_KEYS);
        extension.remove("auth");
        ExtensionsSection.AUTH_KEYS.forEach(k -> extension.add("auth." + k));
        tables.put("`extensions.<name>`", extension);
        tables.put("Rules", RulesSection.RULE_KEYS);
        tables.put("`network`", NetworkSection.NETWORK_KEYS);
        tables.put("`listen`", ListenSection.LISTEN_KEYS);
        Set<String> limits = new LinkedHashSet<>(LimitsSection.LIMITS_KEYS);
        limits.remove("token_budget");
        LimitsSection.TOKEN_BUDGET_KEYS.forEach(k -> limits.add("token_budget." + k));
        tables.put("`limits`", limits);
        tables.put("`inspect`", InspectSection.INSPECT_KEYS);
        tables.put("`tls`", InspectSection.TLS_KEYS);
        tables.put("`upstream_proxy`", UpstreamProxySection.UPSTREAM_PROXY_KEYS);
        tables.put("`audit`", AuditSection.AUDIT_KEYS);
        Set<String> redaction = new LinkedHashSet<>(RedactionSection.REDACTION_KEYS);
        redaction.addAll(RedactionSection.CUSTOM_DETECTOR_KEYS);
        tables.put("`redaction`", redaction);
        Set<String> credential = new LinkedHashSet<>(CredentialsSection.CREDENTIAL_KEYS);
        credential.remove("source");
        credential.remove("inject");
        CredentialsSection.CREDENTIAL_SOURCE_KEYS.forEach(k -> credential.add("source." + k));
        CredentialsSection.CREDENTIAL_INJECT_KEYS.forEach(k -> credential.add("inject." + k));
        tables.put("`credentials.<name>`", credential);
        Set<String> redFlags = new LinkedHashSet<>(RedFlagsSection.RED_FLAG_KEYS);
        RedFlagsSection.RED_FLAG_RULE_KEYS.forEach(k -> redFlags.add("rules." + k));
        RedFlagsSection.SUPPRESS_KEYS.forEach(k -> redFlags.add("suppress." + k));
        tables.put("`red_flags`", redFlags);
        tables.put("`alerts`", AlertsSection.ALERT_KEYS);
        tables.put("`capture`", CaptureSection.KEYS);
        return tables;
    }

        private PolicyLoader() {
    }

    /**
     * Loads and validates {@code file} (UTF-8). The policy's {@code sha256Hex} is the SHA-256 of the
     * file's bytes; its {@code source} is the path as given.
     *
     * @throws PolicyException with every error, or one error when the file cannot be read
     */
    public static Policy load(Path file) throws PolicyException {
        Objects.requireNonNull(file, "file");
        String source = file.toString();
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new PolicyException(List.of(new PolicyError(source, 0, 0,
                    "cannot read: " + e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()))));
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new PolicyException(List.of(new PolicyError(source, 0, 0, "not valid UTF-8 (expected: a UTF-8 text file)")));
        }
        return parse(text, source, sha256Hex(bytes), file);
    }

    /**
     * Parses and validates YAML text; {@code source} names it in errors. The policy's {@code sha256Hex}
     * is the SHA-256 of the text's UTF-8 bytes.
     *
     * @throws PolicyException with every error found
     */
    public static Policy parse(String yaml, String source) throws PolicyException {
        Objects.requireNonNull(yaml, "yaml");
        Objects.requireNonNull(source, "source");
        return parse(yaml, source, sha256Hex(yaml.getBytes(StandardCharsets.UTF_8)), null);
    }

    /**
     * Returns the embedded default policy (resource {@code dev/sluice/rules/policy/default-policy.yaml},
     * loaded by {@link #parse}): a {@code default} extension allowed only to LLM provider API hosts on
     * port 443, nothing else.
     *
     * @throws IllegalStateException when the resource is missing or invalid (a build defect)
     */
    public static Policy embeddedDefault() {
        try (InputStream in = PolicyLoader.class.getResourceAsStream("default-policy.yaml")) {
            if (in == null) {
                throw new IllegalStateException(EMBEDDED_SOURCE + ": resource missing");
            }
            byte[] bytes = in.readAllBytes();
            return parse(new String(bytes, StandardCharsets.UTF_8), EMBEDDED_SOURCE, sha256Hex(bytes), null);
        } catch (IOException e) {
            throw new IllegalStateException(EMBEDDED_SOURCE + ": cannot read", e);
        } catch (PolicyException e) {
            throw new IllegalStateException(EMBEDDED_SOURCE + ": invalid\n" + e.getMessage(), e);
        }
    }

    /**
     * Checks a fragment on its own (what an {@code include} file may hold): its YAML, keys and rules.
     * Whether its extensions and groups exist is checked only when a policy includes it.
     *
     * @throws PolicyException with every error found, located in {@code source}
     */
    public static void parseFragment(String yaml, String source) throws PolicyException {
        PolicyCursor r = new PolicyCursor(source, new ArrayList<>(), null);
        List<YamlTree.Problem> problems = new ArrayList<>();
        Node root = YamlTree.read(yaml, problems);
        for (YamlTree.Problem p : problems) {
            r.errors.add(new PolicyError(source, p.loc().line(), p.loc().column(), p.message()));
        }
        if (root != null && problems.isEmpty()) {
            new IncludeSection(r).fragment(root, new LinkedHashMap<>(), null, null);
        }
        if (!r.errors.isEmpty()) {
            throw new PolicyException(r.errors);
        }
    }

    /**
     * The fingerprint of a policy made of {@code file} and the fragments it includes, as
     * {@link Policy#sha256Hex()} carries it: the SHA-256 of the file's bytes when {@code includes} is
     * empty; otherwise the SHA-256 of the lines {@code <sha256 of file>} and {@code <path> <sha256>} for
     * each fragment, in order. A reloader compares it with the running policy's to notice a change to
     * any of the files.
     *
     * @throws IOException when a file cannot be read (a missing fragment, for one)
     */
    public static String fingerprint(Path file, List<Path> includes) throws IOException {
        String main = sha256Hex(Files.readAllBytes(file));
        if (includes.isEmpty()) {
            return main;
        }
        StringBuilder b = new StringBuilder(main).append('\n');
        for (Path p : includes) {
            b.append(p).append(' ').append(sha256Hex(Files.readAllBytes(p))).append('\n');
        }
        return sha256Hex(b.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static Policy parse(String yaml, String source, String sha256Hex, @Nullable Path file) throws PolicyException {
        PolicyCursor r = new PolicyCursor(source, new ArrayList<>(), file);
        List<YamlTree.Problem> problems = new ArrayList<>();
        Node root = YamlTree.read(yaml, problems);
        for (YamlTree.Problem p : problems) {
            r.errors.add(new PolicyError(source, p.loc().line(), p.loc().column(), p.message()));
        }
        Policy policy = root == null ? null : read(r, root, sha256Hex);
        if (!r.errors.isEmpty() || policy == null) {
            List<PolicyError> sorted = new ArrayList<>(r.errors);
            // the policy file's errors first, then each fragment's, each in file order
            sorted.sort(Comparator.comparing((PolicyError e) -> !e.source().equals(source))
                    .thenComparing(PolicyError::source)
                    .thenComparingInt(PolicyError::line).thenComparingInt(PolicyError::column));
            throw new PolicyException(sorted);
        }
        return policy;
    }

    static String sha256Hex(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    /** Reads the whole policy document; null when an error was found (they are in {@code in.errors}). */
    private static @Nullable Policy read(PolicyCursor in, Node root, String sha256Hex) {
        MapNode top = in.map(root, "policy");
        if (top == null) {
            return null;
        }
        in.checkKeys(top, "", TOP_KEYS, TOP_UNSUPPORTED);

        YamlTree.Entry versionEntry = top.entries().get("version");
        if (versionEntry == null) {
            in.error(top.loc(), "version: missing (expected: 1)");
        } else {
            Node v = versionEntry.value();
            if (!(v instanceof ScalarNode) || ((ScalarNode) v).token() != JsonToken.VALUE_NUMBER_INT
                    || !"1".equals(((ScalarNode) v).text())) {
                in.error(v.loc(), "version: " + show(v) + " (expected: 1)");
            }
        }

        Mode mode = Mode.ENFORCE;
        Node modeNode = value(top, "mode");
        if (modeNode != null) {
            String m = in.string(modeNode, "mode");
            if (m != null) {
                if (m.equals("enforce")) {
                    mode = Mode.ENFORCE;
                } else if (m.equals("report")) {
                    mode = Mode.REPORT;
                } else {
                    in.error(modeNode.loc(), "mode: " + m + " (expected: enforce or report)");
                }
            }
        }

        RulesSection rules = new RulesSection(in);
        ExtensionsSection extensionsSection = new ExtensionsSection(in, rules);
        InspectSection inspectSection = new InspectSection(in);
        NetworkSection networkSection = new NetworkSection(in);
        Map<String, List<Rule>> groups = extensionsSection.groups(value(top, "groups"));
        List<Rule> globalDeny = rules.rules(value(top, "deny"), "deny", true);
        Map<String, Extension> extensions = extensionsSection.extensions(value(top, "extensions"), groups);
        NetworkSettings network = networkSection.network(value(top, "network"));
        ListenSettings listen = new ListenSection(in).listen(value(top, "listen"));
        Limits limits = new LimitsSection(in).limits(value(top, "limits"));
        AuditSettings audit = new AuditSection(in).audit(value(top, "audit"));
        Map<String, InspectedHost> inspect = inspectSection.inspect(value(top, "inspect"));
        TlsSettings tls = inspectSection.tls(value(top, "tls"));
        RedactionSettings redaction = new RedactionSection(in).redaction(value(top, "redaction"));
        UpstreamProxy upstreamProxy = new UpstreamProxySection(in).upstreamProxy(value(top, "upstream_proxy"));
        Map<String, Extension> merged = new LinkedHashMap<>(extensions);
        Path self = in.file == null ? null : in.file.toAbsolutePath().normalize();
        new IncludeSection(in).includes(value(top, "include"), groups, merged, self == null ? List.of() : List.of(self));
        ApprovalSettings approvals = new ApprovalsSection(in).approvals(value(top, "approvals"));
        CredentialsSection credentialsSection = new CredentialsSection(in);
        Map<String, Credential> credentials = credentialsSection.credentials(value(top, "credentials"), inspect);
        extensionsSection.checkCredentialGrants(credentials, credentialsSection.declared());
        dev.sluice.rules.redflag.RedFlagSettings redFlags = new RedFlagsSection(in).redFlags(value(top, "red_flags"),
                networkSection.internalDomains(value(top, "network")));
        AlertSettings alerts = new AlertsSection(in).alerts(value(top, "alerts"));
        CaptureSettings capture = CaptureSection.parse(value(top, "capture"), inspect, in::error);
        if (!in.errors.isEmpty()) {
            return null;
        }
        if (!in.included.isEmpty()) {
            StringBuilder b = new StringBuilder(sha256Hex).append('\n');
            for (int i = 0; i < in.included.size(); i++) {
                b.append(in.included.get(i)).append(' ').append(in.includedSha.get(i)).append('\n');
            }
            sha256Hex = sha256Hex(b.toString().getBytes(StandardCharsets.UTF_8));
        }
        return new Policy(mode, merged, globalDeny, network, listen, limits, audit, in.source, sha256Hex,
                inspect, tls, redaction, upstreamProxy, in.included, approvals, credentials,
                redFlags, alerts, capture);
    }
}
