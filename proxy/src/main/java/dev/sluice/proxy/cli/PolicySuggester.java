package dev.sluice.proxy.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.audit.AuditFields;
import dev.sluice.rules.internal.PathGlob;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The narrowest allow rules that would have allowed what an audit log shows refused by the allowlist
 * ({@code sluice audit suggest}, docs/policy.md "Growing a policy").
 *
 * <p>Records considered: {@code decision} {@code would_deny} (report mode) or {@code deny}, with a
 * reason that a rule can fix: {@code not_allowlisted}, {@code port_not_allowed},
 * {@code method_not_allowed}, {@code path_not_allowed}. Never anything else: {@code address_class},
 * {@code self_loop}, malformed input, {@code denied_by_rule} (a deny entry always wins; an allow cannot
 * change it) and every other reason are counted as "not suggested". Records without an extension are
 * skipped.
 *
 * <p>Shape of a suggestion, per extension: an exact {@code host} per name seen, or {@code *.suffix} when
 * at least {@code minCount} distinct names under that suffix were seen (the deepest such suffix; a
 * suffix has at least two labels, three under a two-letter country TLD); a {@code cidr} /32 or /128 for
 * an IP literal; always the explicit {@code ports} seen. A tunnel (CONNECT, or TLS by SNI) gets a rule
 * without methods or paths, as only such a rule allows a tunnel. Visible requests (plain HTTP,
 * intercepted HTTPS) get {@code methods} and {@code paths}: the path without query, each id-like segment
 * (a number, a UUID, 16+ hex digits, a 20+ character base64-like token) replaced by {@code *}; paths
 * that share the same methods share a rule.
 *
 * <p>Exfiltration-looking names are reported, never suggested: names under a service of the built-in
 * list {@code exfiltration-services.txt} (paste sites, file drops, request catchers, tunnels), and names
 * with a random-looking label (below the registrable part).
 */
final class PolicySuggester {

    /** Reasons an allow rule can fix; every other reason never yields a suggestion. */
    static final Set<String> RULE_MISS_REASONS = Set.of("not_allowlisted", "port_not_allowed",
            "method_not_allowed", "path_not_allowed");

    private static final Pattern UUID = Pattern.compile(
            "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern NUMBER = Pattern.compile("[0-9]+");
    private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]{16,}");
    private static final Pattern BASE64ISH = Pattern.compile("[A-Za-z0-9_+=-]{20,}");
    private static final Pattern IPV4 = Pattern.compile("[0-9]{1,3}(\\.[0-9]{1,3}){3}");

    /** One name of the built-in list of exfiltration-looking services, with its kind. */
    record Service(String domain, String kind) {
    }

    /** A host left out, and why. */
    record Flagged(String extension, String host, String why, long records) {
    }

    /** One suggested rule. Exactly one of host and cidr is set; methods and paths may be empty. */
    record SuggestedRule(String host, String cidr, Set<Integer> ports, Set<String> methods, Set<String> paths,
                         long records, Set<String> reasons) {
    }

    /** The whole suggestion: per extension its rules, the flagged hosts and what was not suggested. */
    record Suggestion(Map<String, List<SuggestedRule>> rules, List<Flagged> flagged,
                      Map<String, Long> notSuggestedByReason, long considered) {
    }

    private static final List<Service> SERVICES = loadServices();

    private final int minCount;
    private long considered;
    private final Map<String, Long> notSuggested = new TreeMap<>();
    /** extension → host → observations. */
    private final Map<String, Map<String, Seen>> seen = new TreeMap<>();

    /** What was seen for one host of one extension. */
    private static final class Seen {
        long records;
        final Set<String> reasons = new TreeSet<>();
        /** Records of tunnels and of intercepted tunnels with no request seen inside. */
        long tunnelRecords;
        /** Ports of tunnels (no visible request). */
        final Set<Integer> tunnelPorts = new TreeSet<>();
        /** Ports of intercepted tunnels (their requests are visible records of their own). */
        final Set<Integer> interceptPorts = new TreeSet<>();
        /** port → path glob → method → records, for visible requests. */
        final Map<Integer, Map<String, Map<String, Long>>> visible = new TreeMap<>();
    }

    /** @param minCount distinct names under a suffix needed before {@code *.suffix} is suggested (>= 1) */
    PolicySuggester(int minCount) {
        if (minCount < 1) {
            throw new IllegalArgumentException("minCount < 1");
        }
        this.minCount = minCount;
    }

    /** Takes one audit record into account (records that do not qualify are counted or ignored). */
    void add(JsonNode r) {
        String decision = r.path(AuditFields.DECISION).asText("");
        if (!decision.equals("would_deny") && !decision.equals("deny")) {
            return;
        }
        if (r.hasNonNull(AuditFields.OUTCOME)) {
            return; // an upstream failure says nothing about what the policy should allow
        }
        String reason = r.path(AuditFields.REASON).asText("(none)");
        String extension = r.path(AuditFields.EXTENSION).asText(null);
        String host = r.path(AuditFields.SERVER_ADDRESS).asText(null);
        JsonNode portNode = r.get(AuditFields.SERVER_PORT);
        if (!RULE_MISS_REASONS.contains(reason) || extension == null || host == null || portNode == null
                || !portNode.canConvertToInt() || portNode.asInt() < 1 || portNode.asInt() > 65535) {
            String key = reason.startsWith("address_class") ? "address_class" : reason;
            notSuggested.merge(RULE_MISS_REASONS.contains(reason) ? reason + " (incomplete record)" : key,
                    1L, Long::sum);
            return;
        }
        considered++;
        int port = portNode.asInt();
        Seen s = seen.computeIfAbsent(extension, e -> new TreeMap<>())
                .computeIfAbsent(host.toLowerCase(Locale.ROOT), h -> new Seen());
        s.records++;
        s.reasons.add(reason);
        String method = r.path(AuditFields.HTTP_REQUEST_METHOD).asText(null);
        String path = r.path(AuditFields.URL_PATH).asText(null);
        String tlsMode = r.path(AuditFields.TLS_MODE).asText("");
        if (method == null || method.equals("CONNECT") || path == null) {
            if (tlsMode.equals("intercept")) {
                s.interceptPorts.add(port);
            } else {
                s.tunnelPorts.add(port);
                s.tunnelRecords++;
            }
            return;
        }
        String glob = pathGlob(path);
        if (glob == null) {
            // A path no glob can name safely (dot segments, encoded separators): only a rule without
            // paths would allow it; suggest the port and method, the operator decides on the path.
            glob = "";
        }
        s.visible.computeIfAbsent(port, p -> new TreeMap<>()).computeIfAbsent(glob, g -> new TreeMap<>())
                .merge(method, 1L, Long::sum);
    }

    /** Returns the suggestion for everything added so far. */
    Suggestion result() {
        Map<String, List<SuggestedRule>> rules = new TreeMap<>();
        List<Flagged> flagged = new ArrayList<>();
        for (Map.Entry<String, Map<String, Seen>> ext : seen.entrySet()) {
            Map<String, Seen> byHost = new TreeMap<>();
            for (Map.Entry<String, Seen> h : ext.getValue().entrySet()) {
                String why = exfiltrationReason(h.getKey());
                if (why != null) {
                    flagged.add(new Flagged(ext.getKey(), h.getKey(), why, h.getValue().records));
                } else {
                    byHost.put(h.getKey(), h.getValue());
                }
            }
            Set<String> flaggedHosts = new TreeSet<>(ext.getValue().keySet());
            flaggedHosts.removeAll(byHost.keySet());
            Map<String, List<String>> patterns = groupBySuffix(byHost.keySet(), flaggedHosts);
            List<SuggestedRule> out = new ArrayList<>();
            for (Map.Entry<String, List<String>> p : patterns.entrySet()) {
                Seen merged = new Seen();
                for (String host : p.getValue()) {
                    merge(merged, byHost.get(host));
                }
                out.addAll(rulesFor(p.getKey(), merged));
            }
            if (!out.isEmpty()) {
                rules.put(ext.getKey(), out);
            }
        }
        return new Suggestion(rules, flagged, notSuggested, considered);
    }

    private static void merge(Seen into, Seen from) {
        into.records += from.records;
        into.reasons.addAll(from.reasons);
        into.tunnelRecords += from.tunnelRecords;
        into.tunnelPorts.addAll(from.tunnelPorts);
        into.interceptPorts.addAll(from.interceptPorts);
        from.visible.forEach((port, paths) -> paths.forEach((glob, methods) -> into.visible
                .computeIfAbsent(port, x -> new TreeMap<>()).computeIfAbsent(glob, x -> new TreeMap<>())
                .putAll(merged(into.visible, port, glob, methods))));
    }

    private static Map<String, Long> merged(Map<Integer, Map<String, Map<String, Long>>> into, int port, String glob,
                                            Map<String, Long> add) {
        Map<String, Long> out = new TreeMap<>(into.getOrDefault(port, Map.of()).getOrDefault(glob, Map.of()));
        add.forEach((m, n) -> out.merge(m, n, Long::sum));
        return out;
    }

    /** The rules for one host pattern: one for tunnels, then one per (method set, path set) of visible requests. */
    private static List<SuggestedRule> rulesFor(String pattern, Seen s) {
        boolean literal = isIpLiteral(pattern);
        String host = literal ? null : pattern;
        String cidr = literal ? pattern + (pattern.indexOf(':') >= 0 ? "/128" : "/32") : null;
        List<SuggestedRule> out = new ArrayList<>();
        Set<Integer> tunnelPorts = new TreeSet<>(s.tunnelPorts);
        for (int p : s.interceptPorts) {
            if (!s.visible.containsKey(p)) {
                tunnelPorts.add(p); // an intercepted tunnel with no request seen inside: only the tunnel is known
            }
        }
        long tunnelRecords = s.tunnelRecords;
        for (Map.Entry<Integer, Map<String, Map<String, Long>>> port : s.visible.entrySet()) {
            if (tunnelPorts.contains(port.getKey())) {
                // the tunnel rule on this port already allows every request
                tunnelRecords += port.getValue().values().stream().flatMap(m -> m.values().stream())
                        .mapToLong(Long::longValue).sum();
            }
        }
        if (!tunnelPorts.isEmpty()) {
            out.add(new SuggestedRule(host, cidr, tunnelPorts, Set.of(), Set.of(), Math.max(1, tunnelRecords), s.reasons));
        }
        // (methods, paths) → ports: rules that differ only in port are merged.
        Map<String, SuggestedRule> byShape = new LinkedHashMap<>();
        for (Map.Entry<Integer, Map<String, Map<String, Long>>> port : s.visible.entrySet()) {
            if (tunnelPorts.contains(port.getKey())) {
                continue;
            }
            Map<Set<String>, Set<String>> pathsByMethods = new LinkedHashMap<>();
            Map<Set<String>, Long> recordsByMethods = new LinkedHashMap<>();
            port.getValue().forEach((glob, methods) -> {
                pathsByMethods.computeIfAbsent(new TreeSet<>(methods.keySet()), m -> new TreeSet<>()).add(glob);
                recordsByMethods.merge(new TreeSet<>(methods.keySet()),
                        methods.values().stream().mapToLong(Long::longValue).sum(), Long::sum);
            });
            for (Map.Entry<Set<String>, Set<String>> shape : pathsByMethods.entrySet()) {
                Set<String> paths = shape.getValue().contains("") ? Set.of() : shape.getValue();
                String key = shape.getKey() + " " + paths;
                SuggestedRule prev = byShape.get(key);
                Set<Integer> ports = new TreeSet<>(prev == null ? Set.of() : prev.ports());
                ports.add(port.getKey());
                long n = recordsByMethods.get(shape.getKey()) + (prev == null ? 0 : prev.records());
                byShape.put(key, new SuggestedRule(host, cidr, ports, shape.getKey(), paths, n, s.reasons));
            }
        }
        out.addAll(byShape.values());
        return out;
    }

    /**
     * Assigns each name to a {@code *.suffix} pattern when at least {@code minCount} distinct names lie
     * under it (deepest suffixes first, each name to one pattern), else to itself. A suffix with a
     * flagged name under it never gets a wildcard (it would allow the flagged name).
     */
    private Map<String, List<String>> groupBySuffix(Set<String> hosts, Set<String> flagged) {
        Map<String, List<String>> out = new TreeMap<>();
        Set<String> left = new TreeSet<>();
        for (String h : hosts) {
            if (isIpLiteral(h)) {
                out.computeIfAbsent(h, k -> new ArrayList<>()).add(h);
            } else {
                left.add(h);
            }
        }
        boolean changed = true;
        while (changed) {
            changed = false;
            Map<String, List<String>> under = new TreeMap<>();
            for (String h : left) {
                for (String suffix : suffixes(h)) {
                    if (flagged.stream().noneMatch(f -> f.endsWith("." + suffix))) {
                        under.computeIfAbsent(suffix, k -> new ArrayList<>()).add(h);
                    }
                }
            }
            String best = under.entrySet().stream()
                    .filter(e -> e.getValue().size() >= minCount && e.getValue().size() >= 2)
                    .map(Map.Entry::getKey)
                    .max(Comparator.comparingInt((String s) -> s.split("\\.").length)
                            .thenComparing(Comparator.reverseOrder()))
                    .orElse(null);
            if (best != null) {
                List<String> members = under.get(best);
                out.put("*." + best, members);
                left.removeAll(members);
                changed = true;
            }
        }
        for (String h : left) {
            out.computeIfAbsent(h, k -> new ArrayList<>()).add(h);
        }
        return out;
    }

    /** The proper suffixes of {@code host} that may carry a wildcard (2+ labels; 3+ under a 2-letter TLD). */
    static List<String> suffixes(String host) {
        String[] labels = host.split("\\.");
        List<String> out = new ArrayList<>();
        String tld = labels[labels.length - 1];
        int minLabels = tld.length() == 2 ? 3 : 2;
        for (int i = 1; i < labels.length; i++) {
            if (labels.length - i >= minLabels) {
                out.add(String.join(".", java.util.Arrays.copyOfRange(labels, i, labels.length)));
            }
        }
        return out;
    }

    /** Returns why {@code host} looks like an exfiltration channel, or null when it does not. */
    static String exfiltrationReason(String host) {
        for (Service s : SERVICES) {
            if (host.equals(s.domain()) || host.endsWith("." + s.domain())) {
                return s.kind() + " service (" + s.domain() + ")";
            }
        }
        if (isIpLiteral(host)) {
            return null;
        }
        String[] labels = host.split("\\.");
        for (int i = 0; i < labels.length - 2; i++) {
            if (randomLooking(labels[i])) {
                return "random-looking label \"" + labels[i] + "\"";
            }
        }
        return null;
    }

    /**
     * Answers whether a DNS label looks machine-generated (encoded data rather than a name): 16+ hex
     * digits; or 10+ characters mixing letters and at least two digits with a character entropy of 3
     * bits or more; or 16+ characters with entropy 3.5 bits or more. Hyphenated parts are judged apart.
     */
    static boolean randomLooking(String label) {
        for (String part : label.split("-")) {
            if (part.length() >= 16 && HEX.matcher(part).matches()) {
                return true;
            }
            if (part.length() < 10) {
                continue;
            }
            int digits = 0;
            int letters = 0;
            for (char c : part.toCharArray()) {
                if (c >= '0' && c <= '9') {
                    digits++;
                } else if (Character.isLetter(c)) {
                    letters++;
                }
            }
            double h = entropy(part);
            if ((digits >= 2 && letters >= 2 && h >= 3.0) || (part.length() >= 16 && h >= 3.5)) {
                return true;
            }
        }
        return false;
    }

    private static double entropy(String s) {
        Map<Character, Integer> counts = new TreeMap<>();
        for (char c : s.toCharArray()) {
            counts.merge(c, 1, Integer::sum);
        }
        double h = 0;
        for (int n : counts.values()) {
            double p = (double) n / s.length();
            h -= p * (Math.log(p) / Math.log(2));
        }
        return h;
    }

    /**
     * Turns a request path (as audited: query values masked) into the narrowest glob: the query is
     * dropped, id-like segments become {@code *}. Returns null for a path no glob can match (dot segments,
     * encoded separators, characters a glob cannot hold).
     */
    static String pathGlob(String auditedPath) {
        int q = auditedPath.indexOf('?');
        String path = q >= 0 ? auditedPath.substring(0, q) : auditedPath;
        if (path.isEmpty() || PathGlob.isAmbiguous(path) || path.indexOf('*') >= 0) {
            return null;
        }
        String[] segments = path.split("/", -1);
        StringBuilder glob = new StringBuilder();
        for (int i = 1; i < segments.length; i++) {
            glob.append('/').append(idLike(segments[i]) ? "*" : segments[i]);
        }
        String g = glob.length() == 0 ? "/" : glob.toString();
        return PathGlob.validate(g) == null && PathGlob.matches(g, path) ? g : null;
    }

    /** Answers whether a path segment is an identifier: a number, a UUID, long hex, or a base64-like token. */
    static boolean idLike(String segment) {
        if (segment.isEmpty()) {
            return false;
        }
        if (NUMBER.matcher(segment).matches() || UUID.matcher(segment).matches() || HEX.matcher(segment).matches()) {
            return true;
        }
        if (BASE64ISH.matcher(segment).matches()) {
            boolean digit = false;
            boolean upper = false;
            boolean lower = false;
            for (char c : segment.toCharArray()) {
                digit |= c >= '0' && c <= '9';
                upper |= c >= 'A' && c <= 'Z';
                lower |= c >= 'a' && c <= 'z';
            }
            return digit && (upper || lower) && (upper && lower || segment.length() >= 24);
        }
        return false;
    }

    static boolean isIpLiteral(String host) {
        return host.indexOf(':') >= 0 || IPV4.matcher(host).matches();
    }

    private static List<Service> loadServices() {
        List<Service> out = new ArrayList<>();
        try (InputStream in = PolicySuggester.class.getResourceAsStream("exfiltration-services.txt")) {
            if (in == null) {
                throw new IllegalStateException("exfiltration-services.txt missing from the jar");
            }
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = reader.readLine()) != null) {
                int hash = line.indexOf('#');
                String text = (hash >= 0 ? line.substring(0, hash) : line).trim();
                if (text.isEmpty()) {
                    continue;
                }
                String[] parts = text.split("\\s+");
                out.add(new Service(parts[0].toLowerCase(Locale.ROOT), parts.length > 1 ? parts[1] : "listed"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return List.copyOf(out);
    }

    /** Renders the suggestion as a policy fragment (YAML, docs/policy.md "include"), comments included. */
    static String toYaml(Suggestion s, String header) {
        StringBuilder y = new StringBuilder();
        header.lines().forEach(l -> y.append("# ").append(l).append('\n'));
        if (s.rules().isEmpty()) {
            y.append("extensions: {}\n");
        } else {
            y.append("extensions:\n");
            s.rules().forEach((ext, rules) -> {
                y.append("  ").append(quote(ext)).append(":\n    allow:\n");
                for (SuggestedRule r : rules) {
                    y.append("      # ").append(r.records()).append(r.records() == 1 ? " record: " : " records: ")
                            .append(String.join(", ", r.reasons())).append('\n');
                    y.append("      - ").append(r.host() != null ? "host: " + quote(r.host()) : "cidr: " + quote(r.cidr()))
                            .append('\n');
                    y.append("        ports: ").append(r.ports()).append('\n');
                    if (!r.methods().isEmpty()) {
                        y.append("        methods: [").append(String.join(", ", r.methods().stream()
                                .map(PolicySuggester::quote).toList())).append("]\n");
                    }
                    if (!r.paths().isEmpty()) {
                        y.append("        paths: [").append(String.join(", ", r.paths().stream()
                                .map(PolicySuggester::quote).toList())).append("]\n");
                    }
                }
            });
        }
        if (!s.flagged().isEmpty()) {
            y.append("# Not suggested: these look like exfiltration channels. Allow one by hand only if you mean it.\n");
            for (Flagged f : s.flagged()) {
                y.append("#   ").append(f.extension()).append(": ").append(f.host()).append(" (").append(f.why())
                        .append(", ").append(f.records()).append(f.records() == 1 ? " record)" : " records)")
                        .append('\n');
            }
        }
        if (!s.notSuggestedByReason().isEmpty()) {
            y.append("# Never suggested (no allow rule may lift these):");
            s.notSuggestedByReason().forEach((reason, n) -> y.append(' ').append(reason).append('=').append(n));
            y.append('\n');
        }
        return y.toString();
    }

    /** A YAML double-quoted scalar (JSON string syntax, which YAML 1.2 reads the same). */
    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c >= 0x7f) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
