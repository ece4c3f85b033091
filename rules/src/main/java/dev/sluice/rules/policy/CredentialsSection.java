package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.NAME;
import static dev.sluice.rules.policy.PolicyCursor.TOKEN;
import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.internal.PathGlob;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Reads the top-level {@code credentials} (docs/policy.md "credentials.&lt;name&gt;"): sources and where each is injected. */
final class CredentialsSection {

    static final Set<String> CREDENTIAL_KEYS = orderedSet("source", "optional", "placeholder_env", "inject");
    static final Set<String> CREDENTIAL_SOURCE_KEYS = orderedSet("env", "file", "key", "command", "ttl");
    /** Names declared under {@code credentials}, valid or not (see {@link #declared()}). */
    private final Set<String> declared = new java.util.HashSet<>();

    /** The names declared under {@code credentials} by the last {@code credentials(...)} read, valid or not. */
    Set<String> declared() {
        return declared;
    }

    static final Set<String> CREDENTIAL_INJECT_KEYS = orderedSet("hosts", "ports", "paths", "header", "basic",
            "query", "body", "sigv4", "sigv4_unsigned_payload");
    static final Set<String> CREDENTIAL_INJECT_UNSUPPORTED = orderedSet();
    static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    /** How long a {@code command} source's value is kept when {@code ttl} is not given. */
    static final Duration DEFAULT_CREDENTIAL_TTL = Duration.ofMinutes(15);

    private final PolicyCursor in;

    CredentialsSection(PolicyCursor in) {
        this.in = in;
    }

    /** Reads the top-level {@code credentials} map (after {@code inspect}: every inject host must be inspected). */
    Map<String, Credential> credentials(@Nullable Node node, Map<String, InspectedHost> inspect) {
        Map<String, Credential> out = new LinkedHashMap<>();
        if (node == null || isNull(node)) {
            return out;
        }
        MapNode m = in.map(node, "credentials");
        if (m == null) {
            return out;
        }
        Map<String, Loc> envOwners = new LinkedHashMap<>();
        for (YamlTree.Entry e : m.entries().values()) {
            String name = e.key();
            String path = "credentials." + name;
            if (!NAME.matcher(name).matches()) {
                in.error(e.keyLoc(), path + ": bad credential name (expected: " + NAME.pattern() + ")");
                continue;
            }
            declared.add(name);
            MapNode c = in.map(e.value(), path);
            if (c == null) {
                continue;
            }
            int before = in.errors.size();
            in.checkKeys(c, path + ".", CREDENTIAL_KEYS, Set.of());
            Credential.Source source = null;
            Node sourceNode = value(c, "source");
            if (sourceNode == null) {
                in.error(c.loc(), path + ".source: missing (expected: {env: VAR}, {file: PATH} or {command: [argv...]})");
            } else {
                source = credentialSource(sourceNode, path + ".source");
            }
            boolean optional = in.bool(value(c, "optional"), path + ".optional", false);
            String env = name.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_]", "_");
            if (!Character.isLetter(env.charAt(0))) {
                env = "SLUICE_" + env;
            }
            Node envNode = value(c, "placeholder_env");
            Loc envLoc = envNode == null ? e.keyLoc() : envNode.loc();
            if (envNode != null) {
                String text = in.string(envNode, path + ".placeholder_env");
                if (text != null && !ENV_NAME.matcher(text).matches()) {
                    in.error(envNode.loc(), path + ".placeholder_env: " + text
                            + " (expected: an environment variable name, " + ENV_NAME.pattern() + ")");
                } else if (text != null) {
                    env = text;
                }
            }
            Loc previous = envOwners.putIfAbsent(env, envLoc);
            if (previous != null) {
                in.error(envLoc, path + ".placeholder_env: " + env + " is already the variable of the credential at line "
                        + previous.line() + " (expected: one variable per credential)");
            }
            Credential.Inject inject = null;
            Node injectNode = value(c, "inject");
            if (injectNode == null) {
                in.error(c.loc(), path + ".inject: missing (expected: hosts and where the placeholder may appear)");
            } else {
                inject = credentialInject(injectNode, path + ".inject", inspect);
            }
            if (in.errors.size() == before && source != null && inject != null) {
                out.put(name, new Credential(name, source, optional, env, inject));
            }
        }
        return out;
    }

    Credential.@Nullable Source credentialSource(Node node, String path) {
        MapNode m = in.map(node, path);
        if (m == null) {
            return null;
        }
        in.checkKeys(m, path + ".", CREDENTIAL_SOURCE_KEYS, Set.of());
        Node env = value(m, "env");
        Node fileNode = value(m, "file");
        Node command = value(m, "command");
        int kinds = (env == null ? 0 : 1) + (fileNode == null ? 0 : 1) + (command == null ? 0 : 1);
        if (kinds != 1) {
            in.error(m.loc(), path + ": " + (kinds == 0 ? "none of env, file, command" : "more than one of env, file, command")
                    + " (expected: exactly one)");
            return null;
        }
        Node key = value(m, "key");
        Node ttl = value(m, "ttl");
        if (key != null && fileNode == null) {
            in.error(key.loc(), path + ".key: only a file source takes key");
        }
        if (ttl != null && command == null) {
            in.error(ttl.loc(), path + ".ttl: only a command source takes ttl (env and file are read at load)");
        }
        if (env != null) {
            String var = in.string(env, path + ".env");
            if (var != null && !ENV_NAME.matcher(var).matches()) {
                in.error(env.loc(), path + ".env: " + var + " (expected: an environment variable name)");
                return null;
            }
            return var == null ? null : new Credential.Env(var);
        }
        if (fileNode != null) {
            String text = in.string(fileNode, path + ".file");
            String k = key == null ? null : in.string(key, path + ".key");
            if (text == null || text.isEmpty()) {
                if (text != null) {
                    in.error(fileNode.loc(), path + ".file: empty (expected: a path)");
                }
                return null;
            }
            Path base = in.file == null ? Path.of("").toAbsolutePath() : in.file.toAbsolutePath().getParent();
            try {
                return new Credential.FileSource(base.resolve(text).normalize(), k);
            } catch (InvalidPathException ex) {
                in.error(fileNode.loc(), path + ".file: " + text + ": bad path");
                return null;
            }
        }
        ListNode argv = in.list(command, path + ".command");
        if (argv == null) {
            return null;
        }
        if (argv.items().isEmpty()) {
            in.error(argv.loc(), path + ".command: empty (expected: [program, args...], run without a shell)");
            return null;
        }
        List<String> args = new ArrayList<>();
        for (int i = 0; i < argv.items().size(); i++) {
            String a = in.string(argv.items().get(i), path + ".command[" + i + "]");
            if (a == null) {
                return null;
            }
            args.add(a);
        }
        Duration d = in.duration(ttl, path + ".ttl", DEFAULT_CREDENTIAL_TTL);
        return new Credential.Command(args, d);
    }

    Credential.@Nullable Inject credentialInject(Node node, String path, Map<String, InspectedHost> inspect) {
        MapNode m = in.map(node, path);
        if (m == null) {
            return null;
        }
        int before = in.errors.size();
        in.checkKeys(m, path + ".", CREDENTIAL_INJECT_KEYS, CREDENTIAL_INJECT_UNSUPPORTED);
        List<String> hosts = new ArrayList<>();
        Node hostsNode = value(m, "hosts");
        if (hostsNode == null) {
            in.error(m.loc(), path + ".hosts: missing (expected: the inspected hosts the credential belongs to)");
        } else {
            ListNode list = in.list(hostsNode, path + ".hosts");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), path + ".hosts: empty (expected: at least one inspected host)");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    Node h = list.items().get(i);
                    String host = in.hostPattern(h, path + ".hosts[" + i + "]");
                    if (host == null) {
                        continue;
                    }
                    if (!InspectSection.isInspected(host, inspect)) {
                        in.error(h.loc(), path + ".hosts[" + i + "]: " + host + " is not under inspect (expected: a host"
                                + " whose TLS Sluice terminates and whose certificate it verifies; add it to inspect)");
                    } else if (hosts.contains(host)) {
                        in.error(h.loc(), path + ".hosts[" + i + "]: " + host + " listed twice");
                    } else {
                        hosts.add(host);
                    }
                }
            }
        }
        Set<Integer> ports = new LinkedHashSet<>();
        Node portsNode = value(m, "ports");
        if (portsNode != null) {
            ListNode list = in.list(portsNode, path + ".ports");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), path + ".ports: empty (expected: at least one port; omit ports for 443)");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    long port = in.integer(list.items().get(i), path + ".ports[" + i + "]", -1, 1, 65535);
                    if (port > 0 && !ports.add((int) port)) {
                        in.error(list.items().get(i).loc(), path + ".ports[" + i + "]: " + port + " listed twice");
                    }
                }
            }
        }
        List<String> paths = new ArrayList<>();
        Node pathsNode = value(m, "paths");
        if (pathsNode != null) {
            ListNode list = in.list(pathsNode, path + ".paths");
            if (list != null) {
                if (list.items().isEmpty()) {
                    in.error(list.loc(), path + ".paths: empty (expected: at least one glob; omit paths for any)");
                }
                for (int i = 0; i < list.items().size(); i++) {
                    Node pn = list.items().get(i);
                    String glob = in.string(pn, path + ".paths[" + i + "]");
                    if (glob == null) {
                        continue;
                    }
                    String problem = PathGlob.validate(glob);
                    if (problem != null) {
                        in.error(pn.loc(), path + ".paths[" + i + "]: " + glob + " " + problem);
                    } else {
                        paths.add(glob);
                    }
                }
            }
        }
        List<String> headers = names(value(m, "header"), path + ".header", true);
        boolean basic = in.bool(value(m, "basic"), path + ".basic", false);
        List<String> query = names(value(m, "query"), path + ".query", false);
        boolean body = in.bool(value(m, "body"), path + ".body", false);
        boolean sigv4 = in.bool(value(m, "sigv4"), path + ".sigv4", false);
        boolean unsignedPayload = in.bool(value(m, "sigv4_unsigned_payload"), path + ".sigv4_unsigned_payload", false);
        if (headers.isEmpty() && !basic && query.isEmpty() && !body && !sigv4 && in.errors.size() == before) {
            in.error(m.loc(), path + ": no place for the placeholder (expected: at least one of header, basic, query, body,"
                    + " sigv4)");
        }
        String sigv4Problem = CredentialSigV4Keys.problem(sigv4, unsignedPayload, headers, basic);
        if (sigv4Problem != null) {
            in.error(m.loc(), path + ": " + sigv4Problem);
        }
        if (headers.contains("authorization") && basic) {
            in.error(m.loc(), path + ": header authorization and basic both (expected: one; basic decodes a Basic value,"
                    + " header swaps the placeholder where it stands)");
        }
        if (in.errors.size() != before) {
            return null;
        }
        return new Credential.Inject(hosts, ports, paths, headers, basic, query, body, sigv4, unsignedPayload);
    }

    /** A name or a list of names (header names are RFC 9110 tokens, lower-cased). */
    List<String> names(@Nullable Node node, String path, boolean header) {
        List<String> out = new ArrayList<>();
        if (node == null || isNull(node)) {
            return out;
        }
        List<Node> items = new ArrayList<>();
        if (node instanceof ListNode list) {
            items.addAll(list.items());
            if (items.isEmpty()) {
                in.error(node.loc(), path + ": empty (expected: a name or a list of names)");
            }
        } else {
            items.add(node);
        }
        for (Node item : items) {
            String n = in.string(item, path);
            if (n == null) {
                continue;
            }
            if (header && !TOKEN.matcher(n).matches()) {
                in.error(item.loc(), path + ": " + n + " (expected: a header field name)");
            } else if (n.isEmpty()) {
                in.error(item.loc(), path + ": empty (expected: a parameter name)");
            } else {
                String v = header ? n.toLowerCase(Locale.ROOT) : n;
                if (header && (v.equals("host") || v.equals("proxy-authorization") || v.equals("content-length")
                        || v.equals("transfer-encoding"))) {
                    in.error(item.loc(), path + ": " + n + " (expected: a field that carries a credential; Sluice owns "
                            + "this one)");
                } else if (!out.contains(v)) {
                    out.add(v);
                }
            }
        }
        return out;
    }
}
