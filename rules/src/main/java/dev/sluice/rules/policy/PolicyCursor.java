package dev.sluice.rules.policy;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.Loc;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * One load's reading state, shared by every section reader ({@code *Section} in this package): the
 * source name that errors carry, the list they are added to (file:line:column, 1-based, from the
 * {@link YamlTree} locations), and the typed value readers (string, integer, size, duration, socket
 * address, CIDR list, host pattern) with the key check every mapping gets. A reader reports a wrong
 * value as an error and returns null or the default; it never throws.
 *
 * <p>Each fragment named by {@code include} is read with a {@link #child} cursor: its own source, file
 * and rule id prefix, the same error list and the same list of fragments read.
 */
final class PolicyCursor {

    /** Extension, group and credential names. */
    static final Pattern NAME = Pattern.compile(Extension.NAME_PATTERN);
    /** RFC 9110 section 5.6.2 token. */
    static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern DURATION = Pattern.compile("([0-9]{1,9})(ms|s|m|h)");
    private static final Pattern SIZE = Pattern.compile("([0-9]{1,12})(B|KiB|MiB|GiB)?");

    final String source;
    final List<PolicyError> errors;
    /** The file read (fragments resolve from its directory), or null for text (they resolve from the cwd). */
    final @Nullable Path file;
    /** Prefix of every rule id this cursor's readers make: empty for the policy, {@code <include>:} for a fragment. */
    final String idPrefix;
    /** Fragments read so far, in order, absolute and normalised (shared by every cursor of one load). */
    final List<Path> included;
    /** Bytes SHA-256 of each included fragment, in the order of {@link #included}. */
    final List<String> includedSha;

    PolicyCursor(String source, List<PolicyError> errors, @Nullable Path file) {
        this(source, errors, file, "", new ArrayList<>(), new ArrayList<>());
    }

    private PolicyCursor(String source, List<PolicyError> errors, @Nullable Path file, String idPrefix, List<Path> included,
                         List<String> includedSha) {
        this.source = source;
        this.errors = errors;
        this.file = file;
        this.idPrefix = idPrefix;
        this.included = included;
        this.includedSha = includedSha;
    }

    /** A cursor for the fragment {@code file}: same errors and fragment lists, rule ids prefixed with {@code idPrefix}. */
    PolicyCursor child(Path file, String idPrefix) {
        return new PolicyCursor(file.toString(), errors, file, idPrefix, included, includedSha);
    }

    void error(Loc loc, String message) {
        errors.add(new PolicyError(source, loc.line(), loc.column(), message));
    }

    static Set<String> orderedSet(String... keys) {
        return new LinkedHashSet<>(List.of(keys));
    }

    /** A value read from a list item, with where it was written. */
    static final class Item<T> {
        final T value;
        final Loc loc;

        Item(T value, Loc loc) {
            this.value = value;
            this.loc = loc;
        }
    }

    List<Item<Cidr>> cidrs(@Nullable Node node, String path) {
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
    @Nullable InetSocketAddress socket(Node node, String path, int defaultPort) {
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

    Duration duration(@Nullable Node node, String path, Duration dflt) {
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

    long size(@Nullable Node node, String path, long dflt, long max) {
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

    long integer(@Nullable Node node, String path, long dflt, long min, long max) {
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

    @Nullable String string(Node node, String path) {
        if (node instanceof ScalarNode && ((ScalarNode) node).token() == JsonToken.VALUE_STRING) {
            return ((ScalarNode) node).text();
        }
        error(node.loc(), path + ": " + show(node) + " (expected: a string)");
        return null;
    }

    static @Nullable String scalarText(Node node) {
        if (node instanceof ScalarNode && !((ScalarNode) node).isNull()) {
            return ((ScalarNode) node).text();
        }
        return null;
    }

    @Nullable MapNode map(Node node, String path) {
        if (node instanceof MapNode) {
            return (MapNode) node;
        }
        error(node.loc(), path + ": " + show(node) + " (expected: a mapping)");
        return null;
    }

    @Nullable ListNode list(Node node, String path) {
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

    boolean bool(@Nullable Node node, String path, boolean dflt) {
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

    @Nullable String hostPattern(Node node, String path) {
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
     * The {@code pattern} of a custom detector or red-flag rule at {@code m} (a {@code java.util.regex}
     * expression), or null after reporting why it is missing or bad.
     */
    @org.jspecify.annotations.Nullable Pattern customPattern(MapNode m, String path) {
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
        return pattern;
    }

    /**
     * The {@code keywords} of a custom detector or red-flag rule at {@code m}: 1 or more, lowercased,
     * distinct, each 2..64 printable ASCII characters without spaces, quotes or backslashes; errors reported.
     */
    List<String> customKeywords(MapNode m, String path) {
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
        return keywords;
    }
}
