package dev.sluice.rules.policy;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.rules.address.Cidr;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.internal.PathGlob;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import dev.sluice.rules.redact.BuiltinDetectors;
import dev.sluice.rules.redact.Detector;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

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

    private static final Set<String> TOP_KEYS = orderedSet("version", "mode", "extensions", "groups", "deny",
            "network", "listen", "limits", "audit", "inspect", "tls", "redaction", "upstream_proxy", "include",
            "approvals", "credentials", "red_flags", "alerts", "capture");
    private static final Set<String> CREDENTIAL_KEYS = orderedSet("source", "optional", "placeholder_env", "inject");
    private static final Set<String> CREDENTIAL_SOURCE_KEYS = orderedSet("env", "file", "key", "command", "ttl");
    private static final Set<String> CREDENTIAL_INJECT_KEYS = orderedSet("hosts", "ports", "paths", "header", "basic",
            "query", "body", "sigv4", "sigv4_unsigned_payload");
    private static final Set<String> CREDENTIAL_INJECT_UNSUPPORTED = orderedSet();
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    /** How long a {@code command} source's value is kept when {@code ttl} is not given. */
    static final Duration DEFAULT_CREDENTIAL_TTL = Duration.ofMinutes(15);
    private static final Set<String> ALERT_KEYS = orderedSet("webhook");
    private static final Set<String> RED_FLAG_KEYS = orderedSet("rules", "direction", "action", "suppress");
    private static final Set<String> RED_FLAG_RULE_KEYS = orderedSet("id", "pattern", "keywords", "action", "direction");
    private static final Set<String> SUPPRESS_KEYS = orderedSet("rule", "host", "path_prefix");
    private static final Set<String> APPROVAL_KEYS = orderedSet("backend", "timeout", "scopes", "overlay");
    /** What a fragment named by {@code include} may contain (docs/policy.md "include"). */
    private static final Set<String> FRAGMENT_KEYS = orderedSet("include", "groups", "extensions");
    private static final Set<String> FRAGMENT_EXTENSION_KEYS = orderedSet("allow", "groups");
    private static final Set<String> TOP_UNSUPPORTED = orderedSet();
    private static final Set<String> INSPECT_KEYS = orderedSet("pins", "pin_mode", "redact", "websocket");
    private static final Set<String> TLS_KEYS = orderedSet("extra_trust");
    private static final Set<String> UPSTREAM_PROXY_KEYS = orderedSet("https", "http", "no_proxy", "auth_file",
            "connect_by");
    private static final Pattern PIN = Pattern.compile("sha256/[A-Za-z0-9+/]{43}=");
    private static final Set<String> REDACTION_KEYS = orderedSet("action", "binary", "builtin", "custom");
    private static final Set<String> CUSTOM_DETECTOR_KEYS = orderedSet("id", "pattern", "keywords", "max_length");
    /** Longest match of a custom detector unless {@code max_length} says otherwise, in bytes. */
    static final int DEFAULT_CUSTOM_MAX_LENGTH = 256;
    private static final Set<String> EXTENSION_KEYS = orderedSet("auth", "sources", "allow", "deny", "groups",
            "credentials");
    private static final Set<String> AUTH_KEYS = orderedSet("token_sha256");
    private static final Set<String> RULE_KEYS = orderedSet("host", "cidr", "ports", "methods", "paths", "tls_only");
    private static final Set<String> NETWORK_KEYS = orderedSet("allow_private", "hosts", "resolvers",
            "internal_domains");
    private static final Set<String> LISTEN_KEYS = orderedSet("proxy", "transparent", "dns", "admin");
    private static final Set<String> LIMITS_KEYS = orderedSet("header_timeout", "idle_timeout", "max_header_bytes",
            "max_inspected_body", "max_buffered_body", "max_connections_per_extension", "egress_budget",
            "egress_budget_window", "max_websocket_message", "token_budget");
    private static final Set<String> TOKEN_BUDGET_KEYS = orderedSet("tokens", "window");
    private static final Set<String> AUDIT_KEYS = orderedSet("path", "max_file_bytes", "keep_files", "format", "stdout");

    /**
     * Returns every mapping's accepted keys, by the heading of its table in docs/policy.md (for the test
     * that keeps that table complete). Keys of nested mappings are written dotted ({@code auth.token_sha256}).
     */
    static java.util.Map<String, Set<String>> keyTables() {
        java.util.Map<String, Set<String>> tables = new java.util.LinkedHashMap<>();
        tables.put("Top level", TOP_KEYS);
        Set<String> extension = new LinkedHashSet<>(EXTENSION_KEYS);
        extension.remove("auth");
        AUTH_KEYS.forEach(k -> extension.add("auth." + k));
        tables.put("`extensions.<name>`", extension);
        tables.put("Rules", RULE_KEYS);
        tables.put("`network`", NETWORK_KEYS);
        tables.put("`listen`", LISTEN_KEYS);
        Set<String> limits = new LinkedHashSet<>(LIMITS_KEYS);
        limits.remove("token_budget");
        TOKEN_BUDGET_KEYS.forEach(k -> limits.add("token_budget." + k));
        tables.put("`limits`", limits);
        tables.put("`inspect`", INSPECT_KEYS);
        tables.put("`tls`", TLS_KEYS);
        tables.put("`upstream_proxy`", UPSTREAM_PROXY_KEYS);
        tables.put("`audit`", AUDIT_KEYS);
        Set<String> redaction = new LinkedHashSet<>(REDACTION_KEYS);
        redaction.addAll(CUSTOM_DETECTOR_KEYS);
        tables.put("`redaction`", redaction);
        Set<String> credential = new LinkedHashSet<>(CREDENTIAL_KEYS);
        credential.remove("source");
        credential.remove("inject");
        CREDENTIAL_SOURCE_KEYS.forEach(k -> credential.add("source." + k));
        CREDENTIAL_INJECT_KEYS.forEach(k -> credential.add("inject." + k));
        tables.put("`credentials.<name>`", credential);
        Set<String> redFlags = new LinkedHashSet<>(RED_FLAG_KEYS);
        RED_FLAG_RULE_KEYS.forEach(k -> redFlags.add("rules." + k));
        SUPPRESS_KEYS.forEach(k -> redFlags.add("suppress." + k));
        tables.put("`red_flags`", redFlags);
        tables.put("`alerts`", ALERT_KEYS);
        tables.put("`capture`", CaptureSection.KEYS);
        return tables;
    }

    private static final Pattern CUSTOM_ID = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    private static final Pattern NAME = Pattern.compile(Extension.NAME_PATTERN);
    private static final Pattern HEX64 = Pattern.compile("[0-9a-fA-F]{64}");
    /** RFC 9110 section 5.6.2 token. */
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern DURATION = Pattern.compile("([0-9]{1,9})(ms|s|m|h)");
    private static final Pattern SIZE = Pattern.compile("([0-9]{1,12})(B|KiB|MiB|GiB)?");

    static final Limits DEFAULT_LIMITS = new Limits(Duration.ofSeconds(15), Duration.ofSeconds(120), 32768,
            32L * 1024 * 1024, 512);

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
        Reader r = new Reader(source, new ArrayList<>(), null);
        List<YamlTree.Problem> problems = new ArrayList<>();
        Node root = YamlTree.read(yaml, problems);
        for (YamlTree.Problem p : problems) {
            r.errors.add(new PolicyError(source, p.loc().line(), p.loc().column(), p.message()));
        }
        if (root != null && problems.isEmpty()) {
            r.fragment(root, new LinkedHashMap<>(), null, null);
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

    private static Policy parse(String yaml, String source, String sha256Hex, Path file) throws PolicyException {
        Reader r = new Reader(source, new ArrayList<>(), file);
        List<YamlTree.Problem> problems = new ArrayList<>();
        Node root = YamlTree.read(yaml, problems);
        for (YamlTree.Problem p : problems) {
            r.errors.add(new PolicyError(source, p.loc().line(), p.loc().column(), p.message()));
        }
        Policy policy = root == null ? null : r.policy(root, sha256Hex);
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

    private static Set<String> orderedSet(String... keys) {
        return new LinkedHashSet<>(List.of(keys));
    }

    /** One load: the errors found so far and the readers for each section. */
    private static final class Reader {
        final String source;
        final List<PolicyError> errors;
        final Map<String, Loc> ruleLocs = new java.util.HashMap<>();
        /** The file read (fragments resolve from its directory), or null for text (they resolve from the cwd). */
        final Path file;
        /** Prefix of every rule id this reader makes: empty for the policy, {@code <include>:} for a fragment. */
        String idPrefix = "";
        /** Fragments read so far, in order, absolute and normalised (shared by every reader of one load). */
        List<Path> included = new ArrayList<>();
        /** Bytes SHA-256 of each included fragment, in the order of {@link #included}. */
        List<String> includedSha = new ArrayList<>();

        Reader(String source, List<PolicyError> errors, Path file) {
            this.source = source;
            this.errors = errors;
            this.file = file;
        }

        void error(Loc loc, String message) {
            errors.add(new PolicyError(source, loc.line(), loc.column(), message));
        }

        Policy policy(Node root, String sha256Hex) {
            MapNode top = map(root, "policy");
            if (top == null) {
                return null;
            }
            checkKeys(top, "", TOP_KEYS, TOP_UNSUPPORTED);

            YamlTree.Entry versionEntry = top.entries().get("version");
            if (versionEntry == null) {
                error(top.loc(), "version: missing (expected: 1)");
            } else {
                Node v = versionEntry.value();
                if (!(v instanceof ScalarNode) || ((ScalarNode) v).token() != JsonToken.VALUE_NUMBER_INT
                        || !"1".equals(((ScalarNode) v).text())) {
                    error(v.loc(), "version: " + show(v) + " (expected: 1)");
                }
            }

            Mode mode = Mode.ENFORCE;
            Node modeNode = value(top, "mode");
            if (modeNode != null) {
                String m = string(modeNode, "mode");
                if (m != null) {
                    if (m.equals("enforce")) {
                        mode = Mode.ENFORCE;
                    } else if (m.equals("report")) {
                        mode = Mode.REPORT;
                    } else {
                        error(modeNode.loc(), "mode: " + m + " (expected: enforce or report)");
                    }
                }
            }

            Map<String, List<Rule>> groups = groups(value(top, "groups"));
            List<Rule> globalDeny = rules(value(top, "deny"), "deny", true);
            Map<String, Extension> extensions = extensions(value(top, "extensions"), groups);
            NetworkSettings network = network(value(top, "network"));
            ListenSettings listen = listen(value(top, "listen"));
            Limits limits = limits(value(top, "limits"));
            AuditSettings audit = audit(value(top, "audit"));
            Map<String, InspectedHost> inspect = inspect(value(top, "inspect"));
            TlsSettings tls = tls(value(top, "tls"));
            RedactionSettings redaction = redaction(value(top, "redaction"));
            UpstreamProxy upstreamProxy = upstreamProxy(value(top, "upstream_proxy"));
            Map<String, Extension> merged = new LinkedHashMap<>(extensions);
            Path self = file == null ? null : file.toAbsolutePath().normalize();
            includes(value(top, "include"), groups, merged, self == null ? List.of() : List.of(self));
            ApprovalSettings approvals = approvals(value(top, "approvals"));
            Map<String, Credential> credentials = credentials(value(top, "credentials"), inspect);
            checkCredentialGrants(credentials);
            dev.sluice.rules.redflag.RedFlagSettings redFlags = redFlags(value(top, "red_flags"),
                    internalDomains(value(top, "network")));
            AlertSettings alerts = alerts(value(top, "alerts"));
            CaptureSettings capture = CaptureSection.parse(value(top, "capture"), inspect, this::error);
            if (!errors.isEmpty()) {
                return null;
            }
            if (!included.isEmpty()) {
                StringBuilder b = new StringBuilder(sha256Hex).append('\n');
                for (int i = 0; i < included.size(); i++) {
                    b.append(included.get(i)).append(' ').append(includedSha.get(i)).append('\n');
                }
                sha256Hex = PolicyLoader.sha256Hex(b.toString().getBytes(StandardCharsets.UTF_8));
            }
            return new Policy(mode, merged, globalDeny, network, listen, limits, audit, source, sha256Hex,
                    inspect, tls, redaction, upstreamProxy, included, approvals, credentials,
                    redFlags, alerts, capture);
        }

        AlertSettings alerts(Node node) {
            if (node == null || isNull(node)) {
                return null;
            }
            MapNode m = map(node, "alerts");
            if (m == null) {
                return null;
            }
            checkKeys(m, "alerts.", ALERT_KEYS, Set.of());
            Node w = value(m, "webhook");
            if (w == null) {
                error(m.loc(), "alerts.webhook: missing (expected: an http:// or https:// URL)");
                return null;
            }
            String text = string(w, "alerts.webhook");
            if (text == null) {
                return null;
            }
            try {
                java.net.URI uri = new java.net.URI(text);
                if (uri.getScheme() == null || !Set.of("http", "https").contains(uri.getScheme())
                        || uri.getHost() == null || uri.getUserInfo() != null) {
                    throw new java.net.URISyntaxException(text, "not an http(s) URL");
                }
                return new AlertSettings(uri);
            } catch (java.net.URISyntaxException e) {
                error(w.loc(), "alerts.webhook: " + text + " (expected: an http:// or https:// URL without user info)");
                return null;
            }
        }

        // ---- red flags ----

        /** {@code network.internal_domains}: lowercase domain names (validated here; the rest of network elsewhere). */
        List<String> internalDomains(Node network) {
            List<String> out = new ArrayList<>();
            if (!(network instanceof MapNode m)) {
                return out;
            }
            Node node = value(m, "internal_domains");
            if (node == null || isNull(node)) {
                return out;
            }
            ListNode list = list(node, "network.internal_domains");
            if (list == null) {
                return out;
            }
            for (int i = 0; i < list.items().size(); i++) {
                Node item = list.items().get(i);
                String d = string(item, "network.internal_domains[" + i + "]");
                if (d == null) {
                    continue;
                }
                String lower = d.toLowerCase(Locale.ROOT);
                if (!lower.matches("(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")) {
                    error(item.loc(), "network.internal_domains[" + i + "]: " + d + " (expected: a domain name such as corp.example)");
                } else {
                    out.add(lower);
                }
            }
            return out;
        }

        dev.sluice.rules.redflag.RedFlagSettings redFlags(Node node, List<String> internalDomains) {
            if (node == null || isNull(node)) {
                return null;
            }
            MapNode m = map(node, "red_flags");
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, "red_flags.", RED_FLAG_KEYS, Set.of());
            dev.sluice.rules.redflag.RedFlagAction action = redFlagAction(value(m, "action"), "red_flags.action",
                    dev.sluice.rules.redflag.RedFlagAction.LOG);
            dev.sluice.rules.redflag.RedFlagDirection direction = redFlagDirection(value(m, "direction"),
                    "red_flags.direction", dev.sluice.rules.redflag.RedFlagDirection.BOTH);
            List<dev.sluice.rules.redflag.RedFlagRule> rules = new ArrayList<>();
            Set<String> ids = new LinkedHashSet<>();
            Node rulesNode = value(m, "rules");
            if (rulesNode == null) {
                error(m.loc(), "red_flags.rules: missing (expected: a list of built-in ids or {id, pattern, keywords})");
            } else {
                ListNode list = list(rulesNode, "red_flags.rules");
                if (list != null) {
                    for (int i = 0; i < list.items().size(); i++) {
                        dev.sluice.rules.redflag.RedFlagRule r = redFlagRule(list.items().get(i),
                                "red_flags.rules[" + i + "]", ids, action, direction, internalDomains);
                        if (r != null) {
                            rules.add(r);
                        }
                    }
                }
            }
            List<dev.sluice.rules.redflag.RedFlagSettings.Suppression> suppress = new ArrayList<>();
            Node suppressNode = value(m, "suppress");
            if (suppressNode != null && !isNull(suppressNode)) {
                ListNode list = list(suppressNode, "red_flags.suppress");
                if (list != null) {
                    for (int i = 0; i < list.items().size(); i++) {
                        String path = "red_flags.suppress[" + i + "]";
                        MapNode s = map(list.items().get(i), path);
                        if (s == null) {
                            continue;
                        }
                        checkKeys(s, path + ".", SUPPRESS_KEYS, Set.of());
                        Node ruleNode = value(s, "rule");
                        String rule = null;
                        if (ruleNode == null) {
                            error(s.loc(), path + ".rule: missing (expected: the id of one of red_flags.rules)");
                        } else {
                            rule = string(ruleNode, path + ".rule");
                            if (rule != null && !ids.contains(rule)) {
                                error(ruleNode.loc(), path + ".rule: " + rule + " (expected: the id of one of red_flags.rules)");
                            }
                        }
                        String host = null;
                        Node hostNode = value(s, "host");
                        if (hostNode != null) {
                            String h = string(hostNode, path + ".host");
                            if (h != null) {
                                try {
                                    host = dev.sluice.rules.target.TargetParser.canonicalHost(h, 443).host();
                                } catch (dev.sluice.rules.target.MalformedTargetException e) {
                                    error(hostNode.loc(), path + ".host: " + h + " (expected: a host name)");
                                }
                            }
                        }
                        String prefix = null;
                        Node prefixNode = value(s, "path_prefix");
                        if (prefixNode != null) {
                            prefix = string(prefixNode, path + ".path_prefix");
                            if (prefix != null && !prefix.startsWith("/")) {
                                error(prefixNode.loc(), path + ".path_prefix: " + prefix + " (expected: a path starting with /)");
                            }
                        }
                        if (rule != null) {
                            suppress.add(new dev.sluice.rules.redflag.RedFlagSettings.Suppression(rule, host, prefix));
                        }
                    }
                }
            }
            if (errors.size() != before) {
                return null;
            }
            return new dev.sluice.rules.redflag.RedFlagSettings(rules, suppress);
        }

        dev.sluice.rules.redflag.RedFlagRule redFlagRule(Node node, String path, Set<String> ids,
                                                          dev.sluice.rules.redflag.RedFlagAction action,
                                                          dev.sluice.rules.redflag.RedFlagDirection direction,
                                                          List<String> internalDomains) {
            if (node instanceof ScalarNode) {
                String id = string(node, path);
                if (id == null) {
                    return null;
                }
                java.util.Optional<dev.sluice.rules.redflag.RedFlagDetector> d =
                        dev.sluice.rules.redflag.BuiltinRedFlags.byId(id, internalDomains);
                if (d.isEmpty()) {
                    error(node.loc(), path + ": " + id + " (expected: one of "
                            + String.join(", ", dev.sluice.rules.redflag.BuiltinRedFlags.IDS) + ", or {id, pattern, keywords})");
                    return null;
                }
                if (!ids.add(id)) {
                    error(node.loc(), path + ": " + id + " listed twice");
                    return null;
                }
                return new dev.sluice.rules.redflag.RedFlagRule(d.get(), action, direction);
            }
            MapNode m = map(node, path);
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, path + ".", RED_FLAG_RULE_KEYS, Set.of());
            dev.sluice.rules.redflag.RedFlagAction a = redFlagAction(value(m, "action"), path + ".action", action);
            dev.sluice.rules.redflag.RedFlagDirection dir = redFlagDirection(value(m, "direction"), path + ".direction",
                    direction);
            Node idNode = value(m, "id");
            if (idNode == null) {
                error(m.loc(), path + ".id: missing (expected: a built-in id, or a new id such as acme-project)");
                return null;
            }
            String id = string(idNode, path + ".id");
            if (id == null) {
                return null;
            }
            if (!ids.add(id)) {
                error(idNode.loc(), path + ".id: " + id + " listed twice");
                return null;
            }
            java.util.Optional<dev.sluice.rules.redflag.RedFlagDetector> builtin =
                    dev.sluice.rules.redflag.BuiltinRedFlags.byId(id, internalDomains);
            if (builtin.isPresent()) {
                if (value(m, "pattern") != null || value(m, "keywords") != null) {
                    error(idNode.loc(), path + ".id: " + id
                            + " is a built-in rule (expected: no pattern or keywords, or a new id)");
                    return null;
                }
                return errors.size() != before ? null : new dev.sluice.rules.redflag.RedFlagRule(builtin.get(), a, dir);
            }
            if (!CUSTOM_ID.matcher(id).matches()) {
                error(idNode.loc(), path + ".id: " + id + " (expected: " + CUSTOM_ID.pattern() + ")");
                return null;
            }
            // pattern and keywords are validated as a custom redaction detector's are
            Set<String> scratch = new LinkedHashSet<>();
            Pattern pattern = null;
            Node patternNode = value(m, "pattern");
            if (patternNode == null) {
                error(m.loc(), path + ".pattern: missing (expected: a Java regular expression)");
            } else {
                String regex = string(patternNode, path + ".pattern");
                if (regex != null) {
                    try {
                        pattern = Pattern.compile(regex);
                    } catch (java.util.regex.PatternSyntaxException e) {
                        error(patternNode.loc(), path + ".pattern: bad regular expression: " + e.getDescription()
                                + " near index " + e.getIndex() + " (expected: java.util.regex syntax)");
                    }
                }
            }
            List<String> keywords = new ArrayList<>();
            Node keywordsNode = value(m, "keywords");
            if (keywordsNode == null) {
                error(m.loc(), path + ".keywords: missing (expected: a list of 1 or more strings found in every match)");
            } else {
                ListNode list = list(keywordsNode, path + ".keywords");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), path + ".keywords: empty (expected: a list of 1 or more strings found in every match)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node k = list.items().get(i);
                        String kw = string(k, path + ".keywords[" + i + "]");
                        if (kw == null) {
                            continue;
                        }
                        String lower = kw.toLowerCase(Locale.ROOT);
                        if (lower.length() < 2 || lower.length() > 64
                                || !lower.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '"' && c != '\\')) {
                            error(k.loc(), path + ".keywords[" + i + "]: " + kw
                                    + " (expected: 2..64 printable ASCII characters without spaces, quotes or backslashes)");
                        } else if (!keywords.contains(lower)) {
                            keywords.add(lower);
                        }
                    }
                }
            }
            if (errors.size() != before || pattern == null || keywords.isEmpty()) {
                return null;
            }
            return new dev.sluice.rules.redflag.RedFlagRule(
                    dev.sluice.rules.redflag.BuiltinRedFlags.custom(id, pattern, keywords), a, dir);
        }

        dev.sluice.rules.redflag.RedFlagAction redFlagAction(Node node, String path,
                                                              dev.sluice.rules.redflag.RedFlagAction dflt) {
            if (node == null) {
                return dflt;
            }
            String a = string(node, path);
            if (a == null) {
                return dflt;
            }
            return switch (a) {
                case "log" -> dev.sluice.rules.redflag.RedFlagAction.LOG;
                case "alert" -> dev.sluice.rules.redflag.RedFlagAction.ALERT;
                case "block" -> dev.sluice.rules.redflag.RedFlagAction.BLOCK;
                default -> {
                    error(node.loc(), path + ": " + a + " (expected: log, alert or block)");
                    yield dflt;
                }
            };
        }

        dev.sluice.rules.redflag.RedFlagDirection redFlagDirection(Node node, String path,
                                                                    dev.sluice.rules.redflag.RedFlagDirection dflt) {
            if (node == null) {
                return dflt;
            }
            String d = string(node, path);
            if (d == null) {
                return dflt;
            }
            return switch (d) {
                case "request" -> dev.sluice.rules.redflag.RedFlagDirection.REQUEST;
                case "response" -> dev.sluice.rules.redflag.RedFlagDirection.RESPONSE;
                case "both" -> dev.sluice.rules.redflag.RedFlagDirection.BOTH;
                default -> {
                    error(node.loc(), path + ": " + d + " (expected: request, response or both)");
                    yield dflt;
                }
            };
        }

        // ---- approvals ----

        /** Reads {@code approvals} (after {@code include}: the overlay must be one of the fragments). */
        ApprovalSettings approvals(Node node) {
            if (node == null || isNull(node)) {
                return null;
            }
            MapNode m = map(node, "approvals");
            if (m == null) {
                return null;
            }
            checkKeys(m, "approvals.", APPROVAL_KEYS, Set.of());
            java.net.URI webhook = null;
            ApprovalSettings.Backend backend = null;
            Node b = value(m, "backend");
            if (b == null) {
                error(m.loc(), "approvals.backend: missing (expected: an http:// or https:// webhook URL, or admin)");
            } else {
                String text = string(b, "approvals.backend");
                if (text != null && text.equals("admin")) {
                    // listen.admin always exists (default 127.0.0.1:9901): sluice approvals reaches it there.
                    backend = ApprovalSettings.Backend.ADMIN;
                } else if (text != null) {
                    try {
                        webhook = new java.net.URI(text);
                        if (webhook.getScheme() == null || !Set.of("http", "https").contains(webhook.getScheme())
                                || webhook.getHost() == null) {
                            throw new java.net.URISyntaxException(text, "not http(s)");
                        }
                        backend = ApprovalSettings.Backend.WEBHOOK;
                    } catch (java.net.URISyntaxException e) {
                        error(b.loc(), "approvals.backend: " + text
                                + " (expected: an http:// or https:// webhook URL, or admin)");
                        webhook = null;
                    }
                }
            }
            Duration timeout = duration(value(m, "timeout"), "approvals.timeout", ApprovalSettings.DEFAULT_TIMEOUT);
            Node t = value(m, "timeout");
            if (t != null && timeout != null && (timeout.isZero() || timeout.compareTo(ApprovalSettings.MAX_TIMEOUT) > 0)) {
                error(t.loc(), "approvals.timeout: " + scalarText(t) + " (expected: more than 0, at most 5m)");
            }
            Set<String> scopes = new LinkedHashSet<>();
            Node sc = value(m, "scopes");
            if (sc == null || isNull(sc)) {
                scopes.add("once");
            } else {
                ListNode list = list(sc, "approvals.scopes");
                if (list != null) {
                    for (int i = 0; i < list.items().size(); i++) {
                        String scope = string(list.items().get(i), "approvals.scopes[" + i + "]");
                        if (scope != null && !ApprovalSettings.ALL_SCOPES.contains(scope)) {
                            error(list.items().get(i).loc(), "approvals.scopes[" + i + "]: " + scope
                                    + " (expected: once, session or always)");
                        } else if (scope != null && !scopes.add(scope)) {
                            error(list.items().get(i).loc(), "approvals.scopes[" + i + "]: " + scope + " listed twice");
                        }
                    }
                }
            }
            Path overlay = null;
            Node o = value(m, "overlay");
            if (o != null) {
                String text = string(o, "approvals.overlay");
                if (text != null) {
                    Path base = file == null ? Path.of("").toAbsolutePath() : file.toAbsolutePath().getParent();
                    overlay = base.resolve(text).normalize();
                    if (!included.contains(overlay)) {
                        error(o.loc(), "approvals.overlay: " + text + " is not in include (expected: a fragment the "
                                + "policy includes, so that the rules approved with scope always load)");
                    }
                }
            } else if (scopes.contains("always")) {
                error(m.loc(), "approvals.overlay: missing (expected: the fragment that scope always writes to, "
                        + "listed under include)");
            }
            return backend == null ? null : new ApprovalSettings(backend, webhook, timeout, scopes, overlay);
        }

        // ---- include ----

        /**
         * Reads the fragments listed by an {@code include} node, in order, and merges them into
         * {@code groups} and {@code extensions}. {@code chain} is the files that led here (for cycles).
         */
        void includes(Node node, Map<String, List<Rule>> groups, Map<String, Extension> extensions, List<Path> chain) {
            if (node == null || isNull(node)) {
                return;
            }
            ListNode list = list(node, "include");
            if (list == null) {
                return;
            }
            Path base = file == null ? Path.of("").toAbsolutePath() : file.toAbsolutePath().getParent();
            for (int i = 0; i < list.items().size(); i++) {
                Node item = list.items().get(i);
                String where = "include[" + i + "]";
                String name = string(item, where);
                if (name == null) {
                    continue;
                }
                if (name.isEmpty()) {
                    error(item.loc(), where + ": empty (expected: a path to a policy fragment)");
                    continue;
                }
                Path target;
                try {
                    target = base.resolve(name).normalize();
                } catch (InvalidPathException e) {
                    error(item.loc(), where + ": " + name + ": bad path (expected: a path to a policy fragment)");
                    continue;
                }
                if (chain.contains(target)) {
                    List<String> cycle = new ArrayList<>();
                    for (Path p : chain.subList(chain.indexOf(target), chain.size())) {
                        cycle.add(p.getFileName().toString());
                    }
                    cycle.add(target.getFileName().toString());
                    error(item.loc(), where + ": " + name + " is already being included (cycle: "
                            + String.join(" -> ", cycle) + ") (expected: fragments that include no file that includes them)");
                    continue;
                }
                if (included.contains(target)) {
                    error(item.loc(), where + ": " + name + " is included twice (expected: each fragment once)");
                    continue;
                }
                byte[] bytes;
                try {
                    bytes = Files.readAllBytes(target);
                } catch (IOException e) {
                    error(item.loc(), where + ": cannot read " + target + ": " + e.getClass().getSimpleName()
                            + " (expected: an existing, readable policy fragment)");
                    continue;
                }
                String text;
                try {
                    text = StandardCharsets.UTF_8.newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(bytes)).toString();
                } catch (CharacterCodingException e) {
                    errors.add(new PolicyError(target.toString(), 0, 0, "not valid UTF-8 (expected: a UTF-8 text file)"));
                    continue;
                }
                included.add(target);
                includedSha.add(PolicyLoader.sha256Hex(bytes));
                Reader child = new Reader(target.toString(), errors, target);
                child.idPrefix = name + ":";
                child.included = included;
                child.includedSha = includedSha;
                List<YamlTree.Problem> problems = new ArrayList<>();
                Node root = YamlTree.read(text, problems);
                if (root == null && problems.size() == 1 && problems.get(0).message().startsWith("empty document")) {
                    continue; // an empty fragment (or one of comments only) adds nothing
                }
                for (YamlTree.Problem p : problems) {
                    errors.add(new PolicyError(child.source, p.loc().line(), p.loc().column(), p.message()));
                }
                if (root != null && problems.isEmpty()) {
                    List<Path> next = new ArrayList<>(chain);
                    next.add(target);
                    child.fragment(root, groups, extensions, next);
                }
            }
        }

        /**
         * Reads one fragment: {@code groups} (new names only), {@code extensions.<name>.allow} and
         * {@code .groups} for extensions the policy defines, then its own {@code include}. With
         * {@code extensions == null} (a fragment checked alone) names are not checked against a policy.
         */
        void fragment(Node root, Map<String, List<Rule>> groups, Map<String, Extension> extensions, List<Path> chain) {
            if (isNull(root)) {
                return; // an empty fragment adds nothing
            }
            MapNode top = map(root, "fragment");
            if (top == null) {
                return;
            }
            for (YamlTree.Entry e : top.entries().values()) {
                if (!FRAGMENT_KEYS.contains(e.key())) {
                    error(e.keyLoc(), e.key() + ": not allowed in a fragment (expected one of: "
                            + String.join(", ", FRAGMENT_KEYS) + "; every other section belongs to the main policy file)");
                }
            }
            Map<String, List<Rule>> own = groups(value(top, "groups"));
            for (Map.Entry<String, List<Rule>> g : own.entrySet()) {
                YamlTree.Entry entry = ((MapNode) value(top, "groups")).entries().get(g.getKey());
                if (groups.containsKey(g.getKey())) {
                    error(entry.keyLoc(), "groups." + g.getKey() + ": already defined (expected: a new group name;"
                            + " a fragment cannot change a group defined elsewhere)");
                } else {
                    groups.put(g.getKey(), g.getValue());
                }
            }
            Node extNode = value(top, "extensions");
            if (extNode != null && !isNull(extNode)) {
                MapNode m = map(extNode, "extensions");
                if (m != null) {
                    for (YamlTree.Entry e : m.entries().values()) {
                        String name = e.key();
                        String path = "extensions." + name;
                        Extension existing = extensions == null ? null : extensions.get(name);
                        if (extensions != null && existing == null) {
                            error(e.keyLoc(), path + ": not defined by the policy (expected one of: "
                                    + (extensions.isEmpty() ? "none defined" : String.join(", ", extensions.keySet()))
                                    + "; a fragment adds rules to extensions the policy defines)");
                            continue;
                        } else if (!NAME.matcher(name).matches()) {
                            error(e.keyLoc(), path + ": bad extension name (expected: " + NAME.pattern() + ")");
                            continue;
                        }
                        if (isNull(e.value())) {
                            continue;
                        }
                        MapNode x = map(e.value(), path);
                        if (x == null) {
                            continue;
                        }
                        for (YamlTree.Entry k : x.entries().values()) {
                            if (!FRAGMENT_EXTENSION_KEYS.contains(k.key())) {
                                error(k.keyLoc(), path + "." + k.key() + ": not allowed in a fragment (expected one of: "
                                        + String.join(", ", FRAGMENT_EXTENSION_KEYS) + "; identity and deny rules belong to the main policy file)");
                            }
                        }
                        List<Rule> added = new ArrayList<>(rules(value(x, "allow"), idPrefix + path + ".allow", false));
                        Node groupsNode = value(x, "groups");
                        if (groupsNode != null && !isNull(groupsNode)) {
                            ListNode list = list(groupsNode, path + ".groups");
                            if (list != null) {
                                for (int i = 0; i < list.items().size(); i++) {
                                    Node g = list.items().get(i);
                                    String gname = string(g, path + ".groups[" + i + "]");
                                    if (gname == null) {
                                        continue;
                                    }
                                    if (groups.containsKey(gname)) {
                                        added.addAll(groups.get(gname));
                                    } else if (extensions != null) {
                                        error(g.loc(), path + ".groups[" + i + "]: " + gname + " is not defined (expected one of: "
                                                + (groups.isEmpty() ? "none defined under groups" : String.join(", ", groups.keySet())) + ")");
                                    }
                                }
                            }
                        }
                        if (existing != null && !added.isEmpty()) {
                            List<Rule> allow = new ArrayList<>(existing.allow());
                            allow.addAll(added);
                            extensions.put(name, new Extension(name, existing.tokenSha256(), existing.sources(), allow,
                                    existing.deny(), existing.credentials()));
                        }
                    }
                }
            }
            if (chain != null) {
                includes(value(top, "include"), groups, extensions, chain);
            }
        }

        // ---- sections ----

        Map<String, List<Rule>> groups(Node node) {
            Map<String, List<Rule>> groups = new LinkedHashMap<>();
            if (node == null || isNull(node)) {
                return groups;
            }
            MapNode m = map(node, "groups");
            if (m == null) {
                return groups;
            }
            for (YamlTree.Entry e : m.entries().values()) {
                String path = idPrefix + "groups." + e.key();
                if (!NAME.matcher(e.key()).matches()) {
                    error(e.keyLoc(), path + ": bad group name (expected: " + NAME.pattern() + ")");
                }
                groups.put(e.key(), rules(e.value(), path, false));
            }
            return groups;
        }

        Map<String, Extension> extensions(Node node, Map<String, List<Rule>> groups) {
            Map<String, Extension> extensions = new LinkedHashMap<>();
            if (node == null || isNull(node)) {
                return extensions;
            }
            MapNode m = map(node, "extensions");
            if (m == null) {
                return extensions;
            }
            Map<String, Loc> tokenOwners = new LinkedHashMap<>();
            List<Object[]> sourceOwners = new ArrayList<>(); // {extension, Cidr, Loc}
            for (YamlTree.Entry e : m.entries().values()) {
                String name = e.key();
                String path = "extensions." + name;
                if (!NAME.matcher(name).matches()) {
                    error(e.keyLoc(), path + ": bad extension name (expected: " + NAME.pattern() + ")");
                }
                if (isNull(e.value())) {
                    extensions.put(name, new Extension(name, null, List.of(), List.of(), List.of()));
                    continue;
                }
                MapNode x = map(e.value(), path);
                if (x == null) {
                    continue;
                }
                checkKeys(x, path + ".", EXTENSION_KEYS, Set.of());
                byte[] token = null;
                Node authNode = value(x, "auth");
                if (authNode != null && !isNull(authNode)) {
                    MapNode auth = map(authNode, path + ".auth");
                    if (auth != null) {
                        checkKeys(auth, path + ".auth.", AUTH_KEYS, Set.of());
                        Node t = value(auth, "token_sha256");
                        if (t == null) {
                            error(auth.loc(), path + ".auth.token_sha256: missing (expected: 64 hex digits, see `sluice token new`)");
                        } else {
                            // any scalar: an unquoted all-digit hash is read by YAML as a number
                            String hex = t instanceof ScalarNode && !isNull(t) ? scalarText(t) : string(t, path + ".auth.token_sha256");
                            if (hex != null) {
                                if (!HEX64.matcher(hex).matches()) {
                                    error(t.loc(), path + ".auth.token_sha256: " + hex.length()
                                            + " characters (expected: 64 hex digits, the SHA-256 of the token)");
                                } else {
                                    String lower = hex.toLowerCase(Locale.ROOT);
                                    Loc previous = tokenOwners.putIfAbsent(lower, t.loc());
                                    if (previous != null) {
                                        error(t.loc(), path + ".auth.token_sha256: same token as the extension at line "
                                                + previous.line() + " (expected: one token per extension)");
                                    }
                                    token = HexFormat.of().parseHex(lower);
                                }
                            }
                        }
                    }
                }
                List<Cidr> sources = new ArrayList<>();
                for (Item<Cidr> c : cidrs(value(x, "sources"), path + ".sources")) {
                    for (Object[] other : sourceOwners) {
                        Cidr o = (Cidr) other[1];
                        if (!other[0].equals(name) && overlaps(o, c.value)) {
                            error(c.loc, path + ".sources: " + c.value + " overlaps " + o + " of extension "
                                    + other[0] + " (expected: each source address identifies one extension)");
                        }
                    }
                    sourceOwners.add(new Object[] {name, c.value, c.loc});
                    sources.add(c.value);
                }
                List<Rule> allow = new ArrayList<>(rules(value(x, "allow"), path + ".allow", false));
                List<Rule> deny = rules(value(x, "deny"), path + ".deny", true);
                Node groupsNode = value(x, "groups");
                if (groupsNode != null && !isNull(groupsNode)) {
                    ListNode list = list(groupsNode, path + ".groups");
                    if (list != null) {
                        Set<String> seen = new LinkedHashSet<>();
                        for (int i = 0; i < list.items().size(); i++) {
                            Node g = list.items().get(i);
                            String gname = string(g, path + ".groups[" + i + "]");
                            if (gname == null) {
                                continue;
                            }
                            if (!seen.add(gname)) {
                                error(g.loc(), path + ".groups[" + i + "]: " + gname + " listed twice");
                            } else if (!groups.containsKey(gname)) {
                                error(g.loc(), path + ".groups[" + i + "]: " + gname + " is not defined (expected one of: "
                                        + (groups.isEmpty() ? "none defined under groups" : String.join(", ", groups.keySet())) + ")");
                            } else {
                                allow.addAll(groups.get(gname));
                            }
                        }
                    }
                }
                List<String> granted = credentialNames(value(x, "credentials"), path + ".credentials");
                extensions.put(name, new Extension(name, token, sources, allow, deny, granted));
            }
            return extensions;
        }

        // ---- credentials ----

        /** Each extension's {@code credentials} entries with where they were written, checked once credentials are read. */
        final List<Object[]> credentialRefs = new ArrayList<>(); // {String path, String name, Loc}

        List<String> credentialNames(Node node, String path) {
            List<String> names = new ArrayList<>();
            if (node == null || isNull(node)) {
                return names;
            }
            ListNode list = list(node, path);
            if (list == null) {
                return names;
            }
            for (int i = 0; i < list.items().size(); i++) {
                Node item = list.items().get(i);
                String where = path + "[" + i + "]";
                String name = string(item, where);
                if (name == null) {
                    continue;
                }
                if (names.contains(name)) {
                    error(item.loc(), where + ": " + name + " listed twice");
                    continue;
                }
                names.add(name);
                credentialRefs.add(new Object[] {where, name, item.loc()});
            }
            return names;
        }

        /**
         * Names declared under {@code credentials}, valid or not: a grant of a declared credential that has
         * errors of its own is not reported again as undefined.
         */
        private final Set<String> declaredCredentials = new java.util.HashSet<>();

        void checkCredentialGrants(Map<String, Credential> credentials) {
            for (Object[] ref : credentialRefs) {
                if (!credentials.containsKey((String) ref[1]) && !declaredCredentials.contains((String) ref[1])) {
                    error((Loc) ref[2], ref[0] + ": " + ref[1] + " is not defined (expected one of: "
                            + (credentials.isEmpty() ? "none defined under credentials"
                            : String.join(", ", credentials.keySet())) + ")");
                }
            }
        }

        /** Reads the top-level {@code credentials} map (after {@code inspect}: every inject host must be inspected). */
        Map<String, Credential> credentials(Node node, Map<String, InspectedHost> inspect) {
            Map<String, Credential> out = new LinkedHashMap<>();
            if (node == null || isNull(node)) {
                return out;
            }
            MapNode m = map(node, "credentials");
            if (m == null) {
                return out;
            }
            Map<String, Loc> envOwners = new LinkedHashMap<>();
            for (YamlTree.Entry e : m.entries().values()) {
                String name = e.key();
                String path = "credentials." + name;
                if (!NAME.matcher(name).matches()) {
                    error(e.keyLoc(), path + ": bad credential name (expected: " + NAME.pattern() + ")");
                    continue;
                }
                declaredCredentials.add(name);
                MapNode c = map(e.value(), path);
                if (c == null) {
                    continue;
                }
                int before = errors.size();
                checkKeys(c, path + ".", CREDENTIAL_KEYS, Set.of());
                Credential.Source source = null;
                Node sourceNode = value(c, "source");
                if (sourceNode == null) {
                    error(c.loc(), path + ".source: missing (expected: {env: VAR}, {file: PATH} or {command: [argv...]})");
                } else {
                    source = credentialSource(sourceNode, path + ".source");
                }
                boolean optional = bool(value(c, "optional"), path + ".optional", false);
                String env = name.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_]", "_");
                if (!Character.isLetter(env.charAt(0))) {
                    env = "SLUICE_" + env;
                }
                Node envNode = value(c, "placeholder_env");
                Loc envLoc = envNode == null ? e.keyLoc() : envNode.loc();
                if (envNode != null) {
                    String text = string(envNode, path + ".placeholder_env");
                    if (text != null && !ENV_NAME.matcher(text).matches()) {
                        error(envNode.loc(), path + ".placeholder_env: " + text
                                + " (expected: an environment variable name, " + ENV_NAME.pattern() + ")");
                    } else if (text != null) {
                        env = text;
                    }
                }
                Loc previous = envOwners.putIfAbsent(env, envLoc);
                if (previous != null) {
                    error(envLoc, path + ".placeholder_env: " + env + " is already the variable of the credential at line "
                            + previous.line() + " (expected: one variable per credential)");
                }
                Credential.Inject inject = null;
                Node injectNode = value(c, "inject");
                if (injectNode == null) {
                    error(c.loc(), path + ".inject: missing (expected: hosts and where the placeholder may appear)");
                } else {
                    inject = credentialInject(injectNode, path + ".inject", inspect);
                }
                if (errors.size() == before && source != null && inject != null) {
                    out.put(name, new Credential(name, source, optional, env, inject));
                }
            }
            return out;
        }

        Credential.Source credentialSource(Node node, String path) {
            MapNode m = map(node, path);
            if (m == null) {
                return null;
            }
            checkKeys(m, path + ".", CREDENTIAL_SOURCE_KEYS, Set.of());
            Node env = value(m, "env");
            Node fileNode = value(m, "file");
            Node command = value(m, "command");
            int kinds = (env == null ? 0 : 1) + (fileNode == null ? 0 : 1) + (command == null ? 0 : 1);
            if (kinds != 1) {
                error(m.loc(), path + ": " + (kinds == 0 ? "none of env, file, command" : "more than one of env, file, command")
                        + " (expected: exactly one)");
                return null;
            }
            Node key = value(m, "key");
            Node ttl = value(m, "ttl");
            if (key != null && fileNode == null) {
                error(key.loc(), path + ".key: only a file source takes key");
            }
            if (ttl != null && command == null) {
                error(ttl.loc(), path + ".ttl: only a command source takes ttl (env and file are read at load)");
            }
            if (env != null) {
                String var = string(env, path + ".env");
                if (var != null && !ENV_NAME.matcher(var).matches()) {
                    error(env.loc(), path + ".env: " + var + " (expected: an environment variable name)");
                    return null;
                }
                return var == null ? null : new Credential.Env(var);
            }
            if (fileNode != null) {
                String text = string(fileNode, path + ".file");
                String k = key == null ? null : string(key, path + ".key");
                if (text == null || text.isEmpty()) {
                    if (text != null) {
                        error(fileNode.loc(), path + ".file: empty (expected: a path)");
                    }
                    return null;
                }
                Path base = file == null ? Path.of("").toAbsolutePath() : file.toAbsolutePath().getParent();
                try {
                    return new Credential.FileSource(base.resolve(text).normalize(), k);
                } catch (InvalidPathException ex) {
                    error(fileNode.loc(), path + ".file: " + text + ": bad path");
                    return null;
                }
            }
            ListNode argv = list(command, path + ".command");
            if (argv == null) {
                return null;
            }
            if (argv.items().isEmpty()) {
                error(argv.loc(), path + ".command: empty (expected: [program, args...], run without a shell)");
                return null;
            }
            List<String> args = new ArrayList<>();
            for (int i = 0; i < argv.items().size(); i++) {
                String a = string(argv.items().get(i), path + ".command[" + i + "]");
                if (a == null) {
                    return null;
                }
                args.add(a);
            }
            Duration d = duration(ttl, path + ".ttl", DEFAULT_CREDENTIAL_TTL);
            return new Credential.Command(args, d);
        }

        Credential.Inject credentialInject(Node node, String path, Map<String, InspectedHost> inspect) {
            MapNode m = map(node, path);
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, path + ".", CREDENTIAL_INJECT_KEYS, CREDENTIAL_INJECT_UNSUPPORTED);
            List<String> hosts = new ArrayList<>();
            Node hostsNode = value(m, "hosts");
            if (hostsNode == null) {
                error(m.loc(), path + ".hosts: missing (expected: the inspected hosts the credential belongs to)");
            } else {
                ListNode list = list(hostsNode, path + ".hosts");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), path + ".hosts: empty (expected: at least one inspected host)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node h = list.items().get(i);
                        String host = hostPattern(h, path + ".hosts[" + i + "]");
                        if (host == null) {
                            continue;
                        }
                        if (!isInspected(host, inspect)) {
                            error(h.loc(), path + ".hosts[" + i + "]: " + host + " is not under inspect (expected: a host"
                                    + " whose TLS Sluice terminates and whose certificate it verifies; add it to inspect)");
                        } else if (hosts.contains(host)) {
                            error(h.loc(), path + ".hosts[" + i + "]: " + host + " listed twice");
                        } else {
                            hosts.add(host);
                        }
                    }
                }
            }
            Set<Integer> ports = new LinkedHashSet<>();
            Node portsNode = value(m, "ports");
            if (portsNode != null) {
                ListNode list = list(portsNode, path + ".ports");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), path + ".ports: empty (expected: at least one port; omit ports for 443)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        long port = integer(list.items().get(i), path + ".ports[" + i + "]", -1, 1, 65535);
                        if (port > 0 && !ports.add((int) port)) {
                            error(list.items().get(i).loc(), path + ".ports[" + i + "]: " + port + " listed twice");
                        }
                    }
                }
            }
            List<String> paths = new ArrayList<>();
            Node pathsNode = value(m, "paths");
            if (pathsNode != null) {
                ListNode list = list(pathsNode, path + ".paths");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), path + ".paths: empty (expected: at least one glob; omit paths for any)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node pn = list.items().get(i);
                        String glob = string(pn, path + ".paths[" + i + "]");
                        if (glob == null) {
                            continue;
                        }
                        String problem = PathGlob.validate(glob);
                        if (problem != null) {
                            error(pn.loc(), path + ".paths[" + i + "]: " + glob + " " + problem);
                        } else {
                            paths.add(glob);
                        }
                    }
                }
            }
            List<String> headers = names(value(m, "header"), path + ".header", true);
            boolean basic = bool(value(m, "basic"), path + ".basic", false);
            List<String> query = names(value(m, "query"), path + ".query", false);
            boolean body = bool(value(m, "body"), path + ".body", false);
            boolean sigv4 = bool(value(m, "sigv4"), path + ".sigv4", false);
            boolean unsignedPayload = bool(value(m, "sigv4_unsigned_payload"), path + ".sigv4_unsigned_payload", false);
            if (headers.isEmpty() && !basic && query.isEmpty() && !body && !sigv4 && errors.size() == before) {
                error(m.loc(), path + ": no place for the placeholder (expected: at least one of header, basic, query, body,"
                        + " sigv4)");
            }
            String sigv4Problem = CredentialSigV4Keys.problem(sigv4, unsignedPayload, headers, basic);
            if (sigv4Problem != null) {
                error(m.loc(), path + ": " + sigv4Problem);
            }
            if (headers.contains("authorization") && basic) {
                error(m.loc(), path + ": header authorization and basic both (expected: one; basic decodes a Basic value,"
                        + " header swaps the placeholder where it stands)");
            }
            if (errors.size() != before) {
                return null;
            }
            return new Credential.Inject(hosts, ports, paths, headers, basic, query, body, sigv4, unsignedPayload);
        }

        /** A name or a list of names (header names are RFC 9110 tokens, lower-cased). */
        List<String> names(Node node, String path, boolean header) {
            List<String> out = new ArrayList<>();
            if (node == null || isNull(node)) {
                return out;
            }
            List<Node> items = new ArrayList<>();
            if (node instanceof ListNode list) {
                items.addAll(list.items());
                if (items.isEmpty()) {
                    error(node.loc(), path + ": empty (expected: a name or a list of names)");
                }
            } else {
                items.add(node);
            }
            for (Node item : items) {
                String n = string(item, path);
                if (n == null) {
                    continue;
                }
                if (header && !TOKEN.matcher(n).matches()) {
                    error(item.loc(), path + ": " + n + " (expected: a header field name)");
                } else if (n.isEmpty()) {
                    error(item.loc(), path + ": empty (expected: a parameter name)");
                } else {
                    String v = header ? n.toLowerCase(Locale.ROOT) : n;
                    if (header && (v.equals("host") || v.equals("proxy-authorization") || v.equals("content-length")
                            || v.equals("transfer-encoding"))) {
                        error(item.loc(), path + ": " + n + " (expected: a field that carries a credential; Sluice owns "
                                + "this one)");
                    } else if (!out.contains(v)) {
                        out.add(v);
                    }
                }
            }
            return out;
        }

        boolean bool(Node node, String path, boolean dflt) {
            if (node == null) {
                return dflt;
            }
            if (node instanceof ScalarNode scalar
                    && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                return scalar.token() == JsonToken.VALUE_TRUE;
            }
            error(node.loc(), path + ": " + show(node) + " (expected: true or false)");
            return dflt;
        }

        static boolean isInspected(String host, Map<String, InspectedHost> inspect) {
            if (inspect.containsKey(host)) {
                return true;
            }
            String name = host.startsWith("*.") ? host.substring(1) : host;
            int from = host.startsWith("*.") ? 1 : 0;
            for (int dot = name.indexOf('.', from); dot >= 0; dot = name.indexOf('.', dot + 1)) {
                if (inspect.containsKey("*" + name.substring(dot))) {
                    return true;
                }
            }
            return false;
        }

        NetworkSettings network(Node node) {
            List<Cidr> allowPrivate = new ArrayList<>();
            Map<String, InetAddress> hosts = new LinkedHashMap<>();
            List<InetSocketAddress> resolvers = new ArrayList<>();
            if (node != null && !isNull(node)) {
                MapNode m = map(node, "network");
                if (m != null) {
                    checkKeys(m, "network.", NETWORK_KEYS, Set.of());
                    for (Item<Cidr> c : cidrs(value(m, "allow_private"), "network.allow_private")) {
                        allowPrivate.add(c.value);
                    }
                    Node hostsNode = value(m, "hosts");
                    if (hostsNode != null && !isNull(hostsNode)) {
                        MapNode hm = map(hostsNode, "network.hosts");
                        if (hm != null) {
                            for (YamlTree.Entry e : hm.entries().values()) {
                                String path = "network.hosts." + e.key();
                                String name = null;
                                try {
                                    Target t = TargetParser.canonicalHost(e.key(), 1);
                                    if (t.isIpLiteral()) {
                                        error(e.keyLoc(), path + ": an IP literal (expected: a DNS name)");
                                    } else {
                                        name = t.host();
                                    }
                                } catch (MalformedTargetException ex) {
                                    error(e.keyLoc(), path + ": " + ex.getMessage());
                                }
                                String text = string(e.value(), path);
                                InetAddress address = text == null ? null : IpAddresses.parseStrict(text);
                                if (text != null && address == null) {
                                    error(e.value().loc(), path + ": " + text + " (expected: an IP address such as 10.0.0.5 or fd00::5)");
                                }
                                if (name != null && address != null && hosts.putIfAbsent(name, address) != null) {
                                    error(e.keyLoc(), path + ": same name as an earlier entry (" + name + ")");
                                }
                            }
                        }
                    }
                    Node resolversNode = value(m, "resolvers");
                    if (resolversNode != null && !isNull(resolversNode)) {
                        ListNode list = list(resolversNode, "network.resolvers");
                        if (list != null) {
                            for (int i = 0; i < list.items().size(); i++) {
                                InetSocketAddress a = socket(list.items().get(i), "network.resolvers[" + i + "]", 53);
                                if (a != null) {
                                    resolvers.add(a);
                                }
                            }
                        }
                    }
                }
            }
            return new NetworkSettings(allowPrivate, hosts, resolvers);
        }

        ListenSettings listen(Node node) {
            InetSocketAddress proxy = new InetSocketAddress(IpAddresses.inet4(0x7f000001), 3128);
            InetSocketAddress admin = new InetSocketAddress(IpAddresses.inet4(0x7f000001), 9901);
            InetSocketAddress transparent = null;
            InetSocketAddress dns = null;
            if (node != null && !isNull(node)) {
                MapNode m = map(node, "listen");
                if (m != null) {
                    checkKeys(m, "listen.", LISTEN_KEYS, Set.of());
                    Node p = value(m, "proxy");
                    if (p != null) {
                        InetSocketAddress a = socket(p, "listen.proxy", -1);
                        proxy = a == null ? proxy : a;
                    }
                    Node ad = value(m, "admin");
                    if (ad != null) {
                        InetSocketAddress a = socket(ad, "listen.admin", -1);
                        admin = a == null ? admin : a;
                    }
                    Node t = value(m, "transparent");
                    if (t != null && !isNull(t)) {
                        transparent = socket(t, "listen.transparent", -1);
                    }
                    Node d = value(m, "dns");
                    if (d != null && !isNull(d)) {
                        dns = socket(d, "listen.dns", 53);
                        if (dns != null && (transparent == null || transparent.getAddress().isAnyLocalAddress())) {
                            // The DNS responder answers allowed names with the transparent listener's address.
                            error(d.loc(), "listen.dns: needs listen.transparent with a specific address to answer"
                                    + " with (expected: e.g. transparent: 10.200.0.1:15001, not 0.0.0.0 or absent)");
                        }
                    }
                }
            }
            return new ListenSettings(proxy, transparent, dns, admin);
        }

        Limits limits(Node node) {
            Limits d = DEFAULT_LIMITS;
            if (node == null || isNull(node)) {
                return d;
            }
            MapNode m = map(node, "limits");
            if (m == null) {
                return d;
            }
            checkKeys(m, "limits.", LIMITS_KEYS, Set.of());
            Duration header = duration(value(m, "header_timeout"), "limits.header_timeout", d.headerTimeout());
            Duration idle = duration(value(m, "idle_timeout"), "limits.idle_timeout", d.idleTimeout());
            long headerBytes = size(value(m, "max_header_bytes"), "limits.max_header_bytes", d.maxHeaderBytes(), Integer.MAX_VALUE);
            long body = size(value(m, "max_inspected_body"), "limits.max_inspected_body", d.maxInspectedBodyBytes(), Long.MAX_VALUE);
            long conns = integer(value(m, "max_connections_per_extension"), "limits.max_connections_per_extension",
                    d.maxConnectionsPerExtension(), 1, Integer.MAX_VALUE);
            long budget = size(value(m, "egress_budget"), "limits.egress_budget", d.egressBudgetBytes(), Long.MAX_VALUE);
            Duration window = duration(value(m, "egress_budget_window"), "limits.egress_budget_window",
                    d.egressBudgetWindow());
            long buffered = size(value(m, "max_buffered_body"), "limits.max_buffered_body", d.maxBufferedBodyBytes(),
                    Integer.MAX_VALUE);
            long websocket = size(value(m, "max_websocket_message"), "limits.max_websocket_message",
                    d.maxWebsocketMessageBytes(), Integer.MAX_VALUE);
            long tokens = d.tokenBudget();
            Duration tokenWindow = d.tokenBudgetWindow();
            Node tb = value(m, "token_budget");
            if (tb != null && !isNull(tb)) {
                MapNode t = map(tb, "limits.token_budget");
                if (t != null) {
                    checkKeys(t, "limits.token_budget.", TOKEN_BUDGET_KEYS, Set.of());
                    if (value(t, "tokens") == null) {
                        error(t.loc(), "limits.token_budget.tokens: missing (expected: an integer >= 1)");
                    }
                    tokens = integer(value(t, "tokens"), "limits.token_budget.tokens", 0, 1, Long.MAX_VALUE);
                    tokenWindow = duration(value(t, "window"), "limits.token_budget.window", tokenWindow);
                }
            }
            return new Limits(header, idle, (int) headerBytes, body, (int) conns, budget, window, (int) buffered,
                    (int) websocket, tokens, tokenWindow);
        }

        AuditSettings audit(Node node) {
            AuditSettings d = AuditSettings.DEFAULT;
            if (node == null || isNull(node)) {
                return d;
            }
            MapNode m = map(node, "audit");
            if (m == null) {
                return d;
            }
            checkKeys(m, "audit.", AUDIT_KEYS, Set.of());
            Path path = d.path();
            Node p = value(m, "path");
            if (p != null) {
                String text = string(p, "audit.path");
                if (text != null) {
                    if (text.isEmpty()) {
                        error(p.loc(), "audit.path: empty (expected: a file path)");
                    } else {
                        try {
                            path = Path.of(text);
                        } catch (InvalidPathException e) {
                            error(p.loc(), "audit.path: " + text + " (expected: a valid file path)");
                        }
                    }
                }
            }
            long maxFileBytes = size(value(m, "max_file_bytes"), "audit.max_file_bytes", d.maxFileBytes(),
                    Long.MAX_VALUE);
            long keepFiles = integer(value(m, "keep_files"), "audit.keep_files", d.keepFiles(), 1,
                    AuditSettings.MAX_KEEP_FILES);
            AuditSettings.Format format = d.format();
            Node formatNode = value(m, "format");
            if (formatNode != null) {
                String f = string(formatNode, "audit.format");
                if ("sluice".equals(f)) {
                    format = AuditSettings.Format.SLUICE;
                } else if ("ocsf".equals(f)) {
                    format = AuditSettings.Format.OCSF;
                } else if (f != null) {
                    error(formatNode.loc(), "audit.format: " + f + " (expected: sluice or ocsf)");
                }
            }
            boolean stdout = d.stdout();
            Node stdoutNode = value(m, "stdout");
            if (stdoutNode != null) {
                if (stdoutNode instanceof ScalarNode scalar
                        && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                    stdout = scalar.token() == JsonToken.VALUE_TRUE;
                } else {
                    error(stdoutNode.loc(), "audit.stdout: " + show(stdoutNode) + " (expected: true or false)");
                }
            }
            return new AuditSettings(path, maxFileBytes, (int) keepFiles, format, stdout);
        }

        Map<String, InspectedHost> inspect(Node node) {
            Map<String, InspectedHost> hosts = new LinkedHashMap<>();
            if (node == null || isNull(node)) {
                return hosts;
            }
            MapNode m = map(node, "inspect");
            if (m == null) {
                return hosts;
            }
            for (YamlTree.Entry e : m.entries().values()) {
                String path = "inspect." + e.key();
                String host = hostPattern(new ScalarNode(e.keyLoc(), JsonToken.VALUE_STRING, e.key()), path);
                InspectedHost.PinKind kind = InspectedHost.PinKind.NONE;
                List<String> pins = new ArrayList<>();
                boolean report = false;
                boolean redact = true;
                WebSocketMode websocket = null;
                if (!isNull(e.value())) {
                    MapNode entry = map(e.value(), path);
                    if (entry == null) {
                        continue;
                    }
                    checkKeys(entry, path + ".", INSPECT_KEYS, Set.of());
                    Node pinsNode = value(entry, "pins");
                    if (pinsNode != null && !isNull(pinsNode)) {
                        if (pinsNode instanceof ScalarNode scalar && "tofu".equals(scalar.text())) {
                            kind = InspectedHost.PinKind.TOFU;
                        } else if (pinsNode instanceof ListNode list) {
                            kind = InspectedHost.PinKind.EXPLICIT;
                            for (int i = 0; i < list.items().size(); i++) {
                                String pin = string(list.items().get(i), path + ".pins[" + i + "]");
                                if (pin != null && !PIN.matcher(pin).matches()) {
                                    error(list.items().get(i).loc(), path + ".pins[" + i + "]: " + pin
                                            + " (expected: sha256/ followed by the base64 of 32 bytes)");
                                } else if (pin != null) {
                                    pins.add(pin);
                                }
                            }
                            if (list.items().isEmpty()) {
                                error(pinsNode.loc(), path + ".pins: empty (expected: tofu, or a list of sha256/ pins)");
                            }
                        } else {
                            error(pinsNode.loc(), path + ".pins: " + show(pinsNode)
                                    + " (expected: tofu, or a list of sha256/ pins)");
                        }
                    }
                    Node mode = value(entry, "pin_mode");
                    if (mode != null) {
                        String text = string(mode, path + ".pin_mode");
                        if ("report".equals(text)) {
                            report = true;
                        } else if (text != null && !"enforce".equals(text)) {
                            error(mode.loc(), path + ".pin_mode: " + text + " (expected: enforce or report)");
                        }
                    }
                    Node redactNode = value(entry, "redact");
                    if (redactNode != null) {
                        if (redactNode instanceof ScalarNode scalar
                                && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                            redact = scalar.token() == JsonToken.VALUE_TRUE;
                        } else {
                            error(redactNode.loc(), path + ".redact: " + show(redactNode) + " (expected: true or false)");
                        }
                    }
                    Node websocketNode = value(entry, "websocket");
                    if (websocketNode != null) {
                        String text = string(websocketNode, path + ".websocket");
                        if (text != null) {
                            switch (text) {
                                case "refuse" -> websocket = WebSocketMode.REFUSE;
                                case "relay" -> websocket = WebSocketMode.RELAY;
                                case "inspect" -> websocket = WebSocketMode.INSPECT;
                                default -> error(websocketNode.loc(), path + ".websocket: " + text
                                        + " (expected: refuse, relay or inspect)");
                            }
                        }
                    }
                }
                if (host != null) {
                    hosts.put(host, new InspectedHost(host, kind, pins, report, redact,
                            websocket != null ? websocket : WebSocketMode.defaultFor(redact)));
                }
            }
            return hosts;
        }

        TlsSettings tls(Node node) {
            if (node == null || isNull(node)) {
                return TlsSettings.NONE;
            }
            MapNode m = map(node, "tls");
            if (m == null) {
                return TlsSettings.NONE;
            }
            checkKeys(m, "tls.", TLS_KEYS, Set.of());
            List<Path> files = new ArrayList<>();
            Node extra = value(m, "extra_trust");
            if (extra != null && !isNull(extra)) {
                ListNode list = list(extra, "tls.extra_trust");
                if (list != null) {
                    for (int i = 0; i < list.items().size(); i++) {
                        String text = string(list.items().get(i), "tls.extra_trust[" + i + "]");
                        if (text == null) {
                            continue;
                        }
                        try {
                            files.add(Path.of(text));
                        } catch (InvalidPathException ex) {
                            error(list.items().get(i).loc(), "tls.extra_trust[" + i + "]: " + text
                                    + " (expected: a PEM file path)");
                        }
                    }
                }
            }
            return new TlsSettings(files);
        }

        UpstreamProxy upstreamProxy(Node node) {
            if (node == null || isNull(node)) {
                return UpstreamProxy.NONE;
            }
            MapNode m = map(node, "upstream_proxy");
            if (m == null) {
                return UpstreamProxy.NONE;
            }
            checkKeys(m, "upstream_proxy.", UPSTREAM_PROXY_KEYS, Set.of());
            UpstreamProxy.Parent https = parent(value(m, "https"), "upstream_proxy.https");
            UpstreamProxy.Parent http = parent(value(m, "http"), "upstream_proxy.http");
            if (https == null && http == null && value(m, "https") == null && value(m, "http") == null) {
                error(m.loc(), "upstream_proxy: no parent (expected: https, http or both, e.g. https: http://proxy.corp:3128)");
            }
            List<UpstreamProxy.NoProxy> noProxy = new ArrayList<>();
            Node np = value(m, "no_proxy");
            if (np != null && !isNull(np)) {
                ListNode list = list(np, "upstream_proxy.no_proxy");
                if (list != null) {
                    for (int i = 0; i < list.items().size(); i++) {
                        Node item = list.items().get(i);
                        String path = "upstream_proxy.no_proxy[" + i + "]";
                        String text = string(item, path);
                        if (text == null) {
                            continue;
                        }
                        UpstreamProxy.NoProxy entry = noProxyEntry(text);
                        if (entry == null) {
                            error(item.loc(), path + ": " + text + " (expected: *, a name such as corp.example,"
                                    + " .suffix, an IP or CIDR such as 10.0.0.0/8, each optionally with :port)");
                        } else {
                            noProxy.add(entry);
                        }
                    }
                }
            }
            UpstreamProxy.ParentCredentials credentials = null;
            Node af = value(m, "auth_file");
            if (af != null && !isNull(af)) {
                String text = string(af, "upstream_proxy.auth_file");
                if (text != null) {
                    credentials = credentials(af, text);
                }
            }
            UpstreamProxy.ConnectBy connectBy = UpstreamProxy.ConnectBy.ADDRESS;
            Node cb = value(m, "connect_by");
            if (cb != null && !isNull(cb)) {
                String text = string(cb, "upstream_proxy.connect_by");
                if ("hostname".equals(text)) {
                    connectBy = UpstreamProxy.ConnectBy.HOSTNAME;
                } else if (text != null && !"address".equals(text)) {
                    error(cb.loc(), "upstream_proxy.connect_by: " + text + " (expected: address or hostname)");
                }
            }
            return new UpstreamProxy(https, http, noProxy, credentials, connectBy);
        }

        /** {@code http://host:port[/]}: a parent reached over plain TCP; credentials only in auth_file. */
        UpstreamProxy.Parent parent(Node node, String path) {
            if (node == null || isNull(node)) {
                return null;
            }
            String text = string(node, path);
            if (text == null) {
                return null;
            }
            String expected = " (expected: http://host:port, e.g. http://proxy.corp.example:3128)";
            if (!text.regionMatches(true, 0, "http://", 0, 7)) {
                error(node.loc(), path + ": " + (text.regionMatches(true, 0, "https://", 0, 8)
                        ? "TLS to the parent is not supported" : "not an http:// URL") + expected);
                return null;
            }
            String rest = text.substring(7);
            if (rest.endsWith("/")) {
                rest = rest.substring(0, rest.length() - 1);
            }
            if (rest.indexOf('@') >= 0) {
                // Never echo the text: it holds a credential.
                error(node.loc(), path + ": credentials in the URL (expected: the URL without them, and"
                        + " upstream_proxy.auth_file)");
                return null;
            }
            int colon = rest.lastIndexOf(':');
            if (rest.isEmpty() || colon < 0 || rest.endsWith("]") || rest.indexOf('/') >= 0) {
                error(node.loc(), path + ": " + text + expected);
                return null;
            }
            try {
                Target t = TargetParser.parseAuthority(rest);
                return new UpstreamProxy.Parent(t.host(), t.port());
            } catch (MalformedTargetException | IllegalArgumentException e) {
                error(node.loc(), path + ": " + text + expected);
                return null;
            }
        }

        static UpstreamProxy.NoProxy noProxyEntry(String raw) {
            String text = raw.trim();
            if (text.equals("*")) {
                return new UpstreamProxy.NoProxy(true, null, false, null, 0);
            }
            int port = 0;
            String hostText = text;
            if (text.startsWith("[")) {
                int close = text.indexOf(']');
                if (close < 0) {
                    return null;
                }
                hostText = text.substring(1, close);
                if (close + 1 < text.length()) {
                    if (text.charAt(close + 1) != ':') {
                        return null;
                    }
                    port = portOf(text.substring(close + 2));
                    if (port <= 0) {
                        return null;
                    }
                }
            } else {
                int colon = text.lastIndexOf(':');
                if (colon >= 0 && text.indexOf(':') == colon) {
                    port = portOf(text.substring(colon + 1));
                    if (port <= 0) {
                        return null;
                    }
                    hostText = text.substring(0, colon);
                }
            }
            if (hostText.indexOf('/') >= 0) {
                try {
                    return new UpstreamProxy.NoProxy(false, null, false, Cidr.parse(hostText), port);
                } catch (IllegalArgumentException e) {
                    return null;
                }
            }
            boolean subdomainsOnly = hostText.startsWith(".");
            String name = subdomainsOnly ? hostText.substring(1) : hostText;
            if (name.isEmpty()) {
                return null;
            }
            try {
                Target t = TargetParser.canonicalHost(name, 1);
                if (subdomainsOnly && t.isIpLiteral()) {
                    return null;
                }
                return new UpstreamProxy.NoProxy(false, t.host(), subdomainsOnly, null, port);
            } catch (MalformedTargetException | IllegalArgumentException e) {
                return null;
            }
        }

        private static int portOf(String text) {
            if (!text.matches("[0-9]{1,5}")) {
                return -1;
            }
            int port = Integer.parseInt(text);
            return port >= 1 && port <= 65535 ? port : -1;
        }

        /**
         * Reads {@code user:password} (one line, UTF-8; a relative path is resolved against the policy
         * file's directory); errors never show the file's content.
         */
        UpstreamProxy.ParentCredentials credentials(Node node, String text) {
            String path = "upstream_proxy.auth_file";
            String content;
            try {
                Path file = Path.of(text);
                if (!file.isAbsolute() && !source.startsWith("embedded:")) {
                    Path base = Path.of(source).toAbsolutePath().getParent();
                    file = base == null ? file : base.resolve(file);
                }
                content = Files.readString(file, StandardCharsets.UTF_8);
            } catch (IOException | InvalidPathException | java.io.UncheckedIOException e) {
                error(node.loc(), path + ": " + text + ": cannot read (" + e.getClass().getSimpleName()
                        + "; expected: a file holding user:password on one line)");
                return null;
            }
            if (content.endsWith("\n")) {
                content = content.substring(0, content.length() - 1);
            }
            if (content.endsWith("\r")) {
                content = content.substring(0, content.length() - 1);
            }
            int colon = content.indexOf(':');
            boolean bad = colon <= 0 || content.indexOf('\n') >= 0 || content.indexOf('\r') >= 0;
            for (int i = 0; !bad && i < content.length(); i++) {
                char c = content.charAt(i);
                bad = c < 0x20 || c == 0x7f;
            }
            if (bad) {
                error(node.loc(), path + ": " + text + ": not one line of user:password (expected: a non-empty"
                        + " user name, a colon, the password; no control characters)");
                return null;
            }
            return new UpstreamProxy.ParentCredentials(content.substring(0, colon), content.substring(colon + 1));
        }

        // ---- rules ----

        List<Rule> rules(Node node, String path, boolean deny) {
            List<Rule> rules = new ArrayList<>();
            if (node == null || isNull(node)) {
                return rules;
            }
            ListNode list = list(node, path);
            if (list == null) {
                return rules;
            }
            for (int i = 0; i < list.items().size(); i++) {
                Rule rule = rule(list.items().get(i), path + "[" + i + "]", deny);
                if (rule != null) {
                    rules.add(rule);
                    ruleLocs.put(rule.id(), list.items().get(i).loc());
                }
            }
            checkShadowing(rules, deny);
            return rules;
        }

        /**
         * Reports every rule that an earlier rule of the same list already covers (same or broader
         * host or prefix, its ports, methods and paths included): such a rule can never be the first
         * match, so it is dead or misplaced. Identical rules are reported as duplicates.
         */
        void checkShadowing(List<Rule> rules, boolean deny) {
            Map<String, List<Integer>> byHost = new java.util.HashMap<>();
            Map<Cidr, List<Integer>> byCidr = new java.util.HashMap<>();
            for (int i = 0; i < rules.size(); i++) {
                Rule r = rules.get(i);
                int coverer = -1;
                for (int c : shadowCandidates(r, byHost, byCidr)) {
                    if ((coverer < 0 || c < coverer) && covers(rules.get(c), r, deny)) {
                        coverer = c;
                    }
                }
                if (coverer >= 0) {
                    Rule e = rules.get(coverer);
                    Loc loc = ruleLocs.getOrDefault(r.id(), new Loc(0, 0));
                    if (sameMatch(e, r, deny)) {
                        error(loc, r.id() + ": duplicate of " + e.id() + " (expected: each rule once)");
                    } else {
                        error(loc, r.id() + ": shadowed by " + e.id() + ", which already matches everything it matches"
                                + " (expected: remove it, or place it before " + e.id() + ")");
                    }
                }
                if (r.host() != null) {
                    byHost.computeIfAbsent(r.host(), k -> new ArrayList<>()).add(i);
                } else {
                    byCidr.computeIfAbsent(r.cidr(), k -> new ArrayList<>()).add(i);
                }
            }
        }

        private static List<Integer> shadowCandidates(Rule r, Map<String, List<Integer>> byHost,
                                                      Map<Cidr, List<Integer>> byCidr) {
            List<Integer> out = new ArrayList<>();
            if (r.host() != null) {
                out.addAll(byHost.getOrDefault(r.host(), List.of()));
                String name = r.host().startsWith("*.") ? r.host().substring(2) : r.host();
                for (int dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
                    out.addAll(byHost.getOrDefault("*." + name.substring(dot + 1), List.of()));
                }
                return out;
            }
            byte[] a = r.cidr().network().getAddress();
            for (int len = 0; len <= r.cidr().prefixLength(); len++) {
                byte[] m = a.clone();
                for (int bit = len; bit < m.length * 8; bit++) {
                    m[bit / 8] &= (byte) ~(0x80 >>> (bit % 8));
                }
                Cidr c = new Cidr(m.length == 4 ? IpAddresses.inet4(m) : IpAddresses.inet6(m), len);
                out.addAll(byCidr.getOrDefault(c, List.of()));
            }
            return out;
        }


        Rule rule(Node node, String id, boolean deny) {
            MapNode m = map(node, id);
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, id + ".", RULE_KEYS, Set.of());
            Node hostNode = value(m, "host");
            Node cidrNode = value(m, "cidr");
            String host = null;
            Cidr cidr = null;
            if ((hostNode == null) == (cidrNode == null)) {
                error(m.loc(), id + ": " + (hostNode == null ? "neither host nor cidr" : "both host and cidr")
                        + " (expected: exactly one of host, cidr)");
            }
            if (hostNode != null) {
                host = hostPattern(hostNode, id + ".host");
            }
            if (cidrNode != null) {
                String text = string(cidrNode, id + ".cidr");
                if (text != null) {
                    try {
                        cidr = Cidr.parse(text);
                    } catch (IllegalArgumentException e) {
                        error(cidrNode.loc(), id + ".cidr: " + e.getMessage());
                    }
                }
            }
            Set<Integer> ports = new LinkedHashSet<>();
            Node portsNode = value(m, "ports");
            if (portsNode != null) {
                ListNode list = list(portsNode, id + ".ports");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), id + ".ports: empty (expected: at least one port; omit ports for "
                                + (deny ? "every port" : "the default 80, 443") + ")");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node p = list.items().get(i);
                        long port = integer(p, id + ".ports[" + i + "]", -1, 1, 65535);
                        if (port > 0 && !ports.add((int) port)) {
                            error(p.loc(), id + ".ports[" + i + "]: " + port + " listed twice");
                        }
                    }
                }
            }
            Set<String> methods = new LinkedHashSet<>();
            Node methodsNode = value(m, "methods");
            if (methodsNode != null) {
                ListNode list = list(methodsNode, id + ".methods");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), id + ".methods: empty (expected: at least one method; omit methods for any)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node mn = list.items().get(i);
                        String method = string(mn, id + ".methods[" + i + "]");
                        if (method == null) {
                            continue;
                        }
                        if (!TOKEN.matcher(method).matches() || !method.equals(method.toUpperCase(Locale.ROOT))) {
                            error(mn.loc(), id + ".methods[" + i + "]: " + method
                                    + " (expected: an upper-case method such as GET; methods are case-sensitive)");
                        } else if (!methods.add(method)) {
                            error(mn.loc(), id + ".methods[" + i + "]: " + method + " listed twice");
                        }
                    }
                }
            }
            List<String> paths = new ArrayList<>();
            Node pathsNode = value(m, "paths");
            if (pathsNode != null) {
                ListNode list = list(pathsNode, id + ".paths");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), id + ".paths: empty (expected: at least one glob; omit paths for any)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node pn = list.items().get(i);
                        String glob = string(pn, id + ".paths[" + i + "]");
                        if (glob == null) {
                            continue;
                        }
                        String problem = PathGlob.validate(glob);
                        if (problem != null) {
                            error(pn.loc(), id + ".paths[" + i + "]: " + glob + " " + problem);
                        } else if (paths.contains(glob)) {
                            error(pn.loc(), id + ".paths[" + i + "]: " + glob + " listed twice");
                        } else {
                            paths.add(glob);
                        }
                    }
                }
            }
            Boolean tlsOnly = null;
            Node tlsOnlyNode = value(m, "tls_only");
            if (tlsOnlyNode != null && deny) {
                error(tlsOnlyNode.loc(), id + ".tls_only: only allow rules take tls_only (a deny rule denies every tunnel)");
            } else if (tlsOnlyNode != null) {
                if (tlsOnlyNode instanceof ScalarNode scalar
                        && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                    tlsOnly = scalar.token() == JsonToken.VALUE_TRUE;
                } else {
                    error(tlsOnlyNode.loc(), id + ".tls_only: " + show(tlsOnlyNode) + " (expected: true or false)");
                }
            }
            if (errors.size() != before || (host == null) == (cidr == null)) {
                return null;
            }
            return new Rule(id, host, cidr, ports, methods, paths, tlsOnly);
        }

        String hostPattern(Node node, String path) {
            String text = string(node, path);
            if (text == null) {
                return null;
            }
            boolean wildcard = text.startsWith("*.");
            String name = wildcard ? text.substring(2) : text;
            if (name.indexOf('*') >= 0 || (!wildcard && text.equals("*"))) {
                error(node.loc(), path + ": " + text + " (expected: an exact name, or *.suffix; '*' only as the whole first label)");
                return null;
            }
            try {
                Target t = TargetParser.canonicalHost(name, 1);
                if (t.isIpLiteral()) {
                    error(node.loc(), path + ": " + text + " is an IP literal (expected: a DNS name; use cidr: "
                            + t.host() + (t.isIpv6Literal() ? "/128" : "/32") + " for an address)");
                    return null;
                }
                return wildcard ? "*." + t.host() : t.host();
            } catch (MalformedTargetException e) {
                error(node.loc(), path + ": " + e.getMessage());
                return null;
            }
        }

        /**
         * The {@code redaction} section: {@code action} (redact | block | report, default redact),
         * {@code binary} (block | report, default block: what a finding in a binary body does),
         * {@code builtin} ({@code all}, the default, or a list of built-in detector ids), {@code custom}
         * (a list of {@code {id, pattern, keywords, max_length}}).
         */
        RedactionSettings redaction(Node node) {
            if (node == null || isNull(node)) {
                return RedactionSettings.defaults();
            }
            MapNode m = map(node, "redaction");
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, "redaction.", REDACTION_KEYS, Set.of());
            RedactionAction action = RedactionAction.REDACT;
            Node actionNode = value(m, "action");
            if (actionNode != null) {
                String a = string(actionNode, "redaction.action");
                if (a != null) {
                    switch (a) {
                        case "redact" -> action = RedactionAction.REDACT;
                        case "block" -> action = RedactionAction.BLOCK;
                        case "report" -> action = RedactionAction.REPORT;
                        default -> error(actionNode.loc(), "redaction.action: " + a + " (expected: redact, block or report)");
                    }
                }
            }
            RedactionAction binary = RedactionAction.BLOCK;
            Node binaryNode = value(m, "binary");
            if (binaryNode != null) {
                String b = string(binaryNode, "redaction.binary");
                if (b != null) {
                    switch (b) {
                        case "block" -> binary = RedactionAction.BLOCK;
                        case "report" -> binary = RedactionAction.REPORT;
                        default -> error(binaryNode.loc(), "redaction.binary: " + b + " (expected: block or report)");
                    }
                }
            }
            List<String> builtinIds = new ArrayList<>();
            Node builtinNode = value(m, "builtin");
            if (builtinNode == null || (builtinNode instanceof ScalarNode && "all".equals(scalarText(builtinNode)))) {
                for (Detector d : BuiltinDetectors.all()) {
                    builtinIds.add(d.id());
                }
            } else if (builtinNode instanceof ListNode list) {
                for (int i = 0; i < list.items().size(); i++) {
                    Node item = list.items().get(i);
                    String id = string(item, "redaction.builtin[" + i + "]");
                    if (id == null) {
                        continue;
                    }
                    if (BuiltinDetectors.byId(id).isEmpty()) {
                        error(item.loc(), "redaction.builtin[" + i + "]: " + id + " is not a built-in detector (expected one of: "
                                + String.join(", ", BuiltinDetectors.all().stream().map(Detector::id).toList()) + ")");
                    } else if (builtinIds.contains(id)) {
                        error(item.loc(), "redaction.builtin[" + i + "]: " + id + " listed twice");
                    } else {
                        builtinIds.add(id);
                    }
                }
            } else {
                error(builtinNode.loc(), "redaction.builtin: " + show(builtinNode) + " (expected: all, or a list of detector ids)");
            }
            List<Detector> custom = new ArrayList<>();
            Node customNode = value(m, "custom");
            if (customNode != null && !isNull(customNode)) {
                ListNode list = list(customNode, "redaction.custom");
                if (list != null) {
                    Set<String> ids = new LinkedHashSet<>();
                    for (int i = 0; i < list.items().size(); i++) {
                        Detector d = customDetector(list.items().get(i), "redaction.custom[" + i + "]", ids);
                        if (d != null) {
                            custom.add(d);
                        }
                    }
                }
            }
            if (errors.size() != before) {
                return null;
            }
            return RedactionSettings.of(action, binary, builtinIds, custom);
        }

        Detector customDetector(Node node, String path, Set<String> ids) {
            MapNode m = map(node, path);
            if (m == null) {
                return null;
            }
            int before = errors.size();
            checkKeys(m, path + ".", CUSTOM_DETECTOR_KEYS, Set.of());
            String id = null;
            Node idNode = value(m, "id");
            if (idNode == null) {
                error(m.loc(), path + ".id: missing (expected: an id such as corp-token)");
            } else {
                id = string(idNode, path + ".id");
                if (id != null) {
                    if (!CUSTOM_ID.matcher(id).matches()) {
                        error(idNode.loc(), path + ".id: " + id + " (expected: " + CUSTOM_ID.pattern() + ")");
                    } else if (BuiltinDetectors.byId(id).isPresent()) {
                        error(idNode.loc(), path + ".id: " + id + " is the id of a built-in detector (expected: a new id)");
                    } else if (!ids.add(id)) {
                        error(idNode.loc(), path + ".id: " + id + " listed twice");
                    }
                }
            }
            Pattern pattern = null;
            Node patternNode = value(m, "pattern");
            if (patternNode == null) {
                error(m.loc(), path + ".pattern: missing (expected: a Java regular expression)");
            } else {
                String regex = string(patternNode, path + ".pattern");
                if (regex != null) {
                    try {
                        pattern = Pattern.compile(regex);
                    } catch (java.util.regex.PatternSyntaxException e) {
                        error(patternNode.loc(), path + ".pattern: bad regular expression: " + e.getDescription()
                                + " near index " + e.getIndex() + " (expected: java.util.regex syntax)");
                    }
                }
            }
            List<String> keywords = new ArrayList<>();
            Node keywordsNode = value(m, "keywords");
            if (keywordsNode == null) {
                error(m.loc(), path + ".keywords: missing (expected: a list of 1 or more strings found in every match)");
            } else {
                ListNode list = list(keywordsNode, path + ".keywords");
                if (list != null) {
                    if (list.items().isEmpty()) {
                        error(list.loc(), path + ".keywords: empty (expected: a list of 1 or more strings found in every match)");
                    }
                    for (int i = 0; i < list.items().size(); i++) {
                        Node k = list.items().get(i);
                        String kw = string(k, path + ".keywords[" + i + "]");
                        if (kw == null) {
                            continue;
                        }
                        String lower = kw.toLowerCase(Locale.ROOT);
                        if (lower.length() < 2 || lower.length() > 64
                                || !lower.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '"' && c != '\\')) {
                            error(k.loc(), path + ".keywords[" + i + "]: " + kw
                                    + " (expected: 2..64 printable ASCII characters without spaces, quotes or backslashes)");
                        } else if (!keywords.contains(lower)) {
                            keywords.add(lower);
                        }
                    }
                }
            }
            int maxLength = (int) integer(value(m, "max_length"), path + ".max_length", DEFAULT_CUSTOM_MAX_LENGTH, 1,
                    Detector.MAX_LENGTH_LIMIT);
            if (errors.size() != before || id == null || pattern == null || keywords.isEmpty()) {
                return null;
            }
            return Detector.custom(id, pattern, keywords, maxLength);
        }

        // ---- value helpers ----

        private static final class Item<T> {
            final T value;
            final Loc loc;

            Item(T value, Loc loc) {
                this.value = value;
                this.loc = loc;
            }
        }

        List<Item<Cidr>> cidrs(Node node, String path) {
            List<Item<Cidr>> out = new ArrayList<>();
            if (node == null || isNull(node)) {
                return out;
            }
            ListNode list = list(node, path);
            if (list == null) {
                return out;
            }
            for (int i = 0; i < list.items().size(); i++) {
                Node n = list.items().get(i);
                String text = string(n, path + "[" + i + "]");
                if (text == null) {
                    continue;
                }
                try {
                    out.add(new Item<>(Cidr.parse(text), n.loc()));
                } catch (IllegalArgumentException e) {
                    error(n.loc(), path + "[" + i + "]: " + e.getMessage());
                }
            }
            return out;
        }

        /** Parses {@code ip:port}, {@code [ipv6]:port}, or (with a default port) a bare address. */
        InetSocketAddress socket(Node node, String path, int defaultPort) {
            String text = string(node, path);
            if (text == null) {
                return null;
            }
            String expected = defaultPort < 0
                    ? " (expected: address:port, e.g. 127.0.0.1:3128 or [::1]:3128)"
                    : " (expected: address[:port], e.g. 127.0.0.53 or [::1]:53)";
            String hostText = text;
            String portText = null;
            if (text.startsWith("[")) {
                int close = text.indexOf(']');
                if (close < 0) {
                    error(node.loc(), path + ": " + text + expected);
                    return null;
                }
                hostText = text.substring(0, close + 1);
                if (close + 1 < text.length()) {
                    if (text.charAt(close + 1) != ':') {
                        error(node.loc(), path + ": " + text + expected);
                        return null;
                    }
                    portText = text.substring(close + 2);
                }
            } else {
                int colon = text.indexOf(':');
                if (colon >= 0 && text.indexOf(':', colon + 1) < 0) {
                    hostText = text.substring(0, colon);
                    portText = text.substring(colon + 1);
                }
            }
            InetAddress address = IpAddresses.parseStrict(hostText);
            if (address == null || (!hostText.startsWith("[") && hostText.indexOf(':') >= 0)) {
                error(node.loc(), path + ": " + text + expected);
                return null;
            }
            int port = defaultPort;
            if (portText != null) {
                port = portText.matches("[0-9]{1,5}") ? Integer.parseInt(portText) : -1;
                if (port < 0 || port > 65535) {
                    error(node.loc(), path + ": " + text + " port (expected: 0..65535)");
                    return null;
                }
            } else if (defaultPort < 0) {
                error(node.loc(), path + ": " + text + ": missing port" + expected);
                return null;
            }
            return new InetSocketAddress(address, port);
        }

        Duration duration(Node node, String path, Duration dflt) {
            if (node == null) {
                return dflt;
            }
            String text = scalarText(node);
            java.util.regex.Matcher matcher = text == null ? null : DURATION.matcher(text);
            if (matcher == null || !matcher.matches()) {
                error(node.loc(), path + ": " + show(node) + " (expected: a duration such as 15s, 500ms, 2m, 1h)");
                return dflt;
            }
            long n = Long.parseLong(matcher.group(1));
            Duration d;
            switch (matcher.group(2)) {
                case "ms":
                    d = Duration.ofMillis(n);
                    break;
                case "s":
                    d = Duration.ofSeconds(n);
                    break;
                case "m":
                    d = Duration.ofMinutes(n);
                    break;
                default:
                    d = Duration.ofHours(n);
                    break;
            }
            if (d.isZero()) {
                error(node.loc(), path + ": " + text + " (expected: > 0)");
                return dflt;
            }
            return d;
        }

        long size(Node node, String path, long dflt, long max) {
            if (node == null) {
                return dflt;
            }
            String text = scalarText(node);
            java.util.regex.Matcher matcher = text == null ? null : SIZE.matcher(text);
            if (matcher == null || !matcher.matches()) {
                error(node.loc(), path + ": " + show(node) + " (expected: bytes, or a size such as 64KiB, 32MiB, 1GiB)");
                return dflt;
            }
            long n = Long.parseLong(matcher.group(1));
            String unit = matcher.group(2) == null ? "B" : matcher.group(2);
            int shift = unit.equals("KiB") ? 10 : unit.equals("MiB") ? 20 : unit.equals("GiB") ? 30 : 0;
            if (n == 0 || n > (max >> shift)) {
                error(node.loc(), path + ": " + text + " (expected: 1.." + max + " bytes)");
                return dflt;
            }
            return n << shift;
        }

        long integer(Node node, String path, long dflt, long min, long max) {
            if (node == null) {
                return dflt;
            }
            if (!(node instanceof ScalarNode) || ((ScalarNode) node).token() != JsonToken.VALUE_NUMBER_INT
                    || !((ScalarNode) node).text().matches("0|[1-9][0-9]{0,17}")) {
                error(node.loc(), path + ": " + show(node) + " (expected: an integer " + min + ".." + max + ")");
                return dflt;
            }
            long v = Long.parseLong(((ScalarNode) node).text());
            if (v < min || v > max) {
                error(node.loc(), path + ": " + v + " (expected: " + min + ".." + max + ")");
                return dflt;
            }
            return v;
        }

        String string(Node node, String path) {
            if (node instanceof ScalarNode && ((ScalarNode) node).token() == JsonToken.VALUE_STRING) {
                return ((ScalarNode) node).text();
            }
            error(node.loc(), path + ": " + show(node) + " (expected: a string)");
            return null;
        }

        static String scalarText(Node node) {
            if (node instanceof ScalarNode && !((ScalarNode) node).isNull()) {
                return ((ScalarNode) node).text();
            }
            return null;
        }

        MapNode map(Node node, String path) {
            if (node instanceof MapNode) {
                return (MapNode) node;
            }
            error(node.loc(), path + ": " + show(node) + " (expected: a mapping)");
            return null;
        }

        ListNode list(Node node, String path) {
            if (node instanceof ListNode) {
                return (ListNode) node;
            }
            error(node.loc(), path + ": " + show(node) + " (expected: a list)");
            return null;
        }

        static Node value(MapNode m, String key) {
            YamlTree.Entry e = m.entries().get(key);
            return e == null ? null : e.value();
        }

        static boolean isNull(Node node) {
            return node instanceof ScalarNode && ((ScalarNode) node).isNull();
        }

        void checkKeys(MapNode m, String prefix, Set<String> allowed, Set<String> unsupported) {
            for (YamlTree.Entry e : m.entries().values()) {
                if (allowed.contains(e.key())) {
                    continue;
                }
                if (unsupported.contains(e.key())) {
                    error(e.keyLoc(), prefix + e.key() + ": not supported by this build yet");
                } else {
                    error(e.keyLoc(), prefix + e.key() + ": unknown key (expected one of: " + String.join(", ", allowed) + ")");
                }
            }
        }

        static String show(Node node) {
            if (node instanceof MapNode) {
                return "a mapping";
            }
            if (node instanceof ListNode) {
                return "a list";
            }
            ScalarNode s = (ScalarNode) node;
            if (s.isNull()) {
                return "null";
            }
            String t = s.text();
            return t.length() > 64 ? t.substring(0, 64) + "..." : t;
        }
    }

    /** Answers whether every request rule {@code b} matches is matched by {@code a} as well. */
    static boolean covers(Rule a, Rule b, boolean deny) {
        if (!targetCovers(a, b)) {
            return false;
        }
        if (!a.ports().isEmpty()) {
            Set<Integer> bPorts = b.ports().isEmpty() ? (deny ? null : Set.of(80, 443)) : b.ports();
            if (bPorts == null || !a.ports().containsAll(bPorts)) {
                return false;
            }
        } else if (!deny && !b.ports().isEmpty() && !Set.of(80, 443).containsAll(b.ports())) {
            return false;
        }
        if (!a.methods().isEmpty() && (b.methods().isEmpty() || !a.effectiveMethods().containsAll(b.effectiveMethods()))) {
            return false;
        }
        return a.paths().isEmpty() || (!b.paths().isEmpty() && a.paths().containsAll(b.paths()));
    }

    private static boolean sameMatch(Rule a, Rule b, boolean deny) {
        return covers(a, b, deny) && covers(b, a, deny);
    }

    private static boolean targetCovers(Rule a, Rule b) {
        if (a.cidr() != null || b.cidr() != null) {
            return a.cidr() != null && b.cidr() != null && a.cidr().isIpv4() == b.cidr().isIpv4()
                    && a.cidr().prefixLength() <= b.cidr().prefixLength() && a.cidr().contains(b.cidr().network());
        }
        if (a.host().equals(b.host())) {
            return true;
        }
        if (!a.host().startsWith("*.")) {
            return false;
        }
        String suffix = a.host().substring(1); // ".example.com"
        String name = b.host().startsWith("*.") ? b.host().substring(1) : b.host();
        return name.endsWith(suffix) && name.length() > suffix.length();
    }

    static boolean overlaps(Cidr a, Cidr b) {
        return a.contains(b.network()) || b.contains(a.network());
    }
}
