package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Reads {@code upstream_proxy} (docs/policy.md "upstream_proxy"): parent proxies, no_proxy, auth_file. */
final class UpstreamProxySection {

    static final Set<String> UPSTREAM_PROXY_KEYS = orderedSet("https", "http", "no_proxy", "auth_file",
            "connect_by");

    private final PolicyCursor in;

    UpstreamProxySection(PolicyCursor in) {
        this.in = in;
    }

    UpstreamProxy upstreamProxy(@Nullable Node node) {
        if (node == null || isNull(node)) {
            return UpstreamProxy.NONE;
        }
        MapNode m = in.map(node, "upstream_proxy");
        if (m == null) {
            return UpstreamProxy.NONE;
        }
        in.checkKeys(m, "upstream_proxy.", UPSTREAM_PROXY_KEYS, Set.of());
        UpstreamProxy.Parent https = parent(value(m, "https"), "upstream_proxy.https");
        UpstreamProxy.Parent http = parent(value(m, "http"), "upstream_proxy.http");
        if (https == null && http == null && value(m, "https") == null && value(m, "http") == null) {
            in.error(m.loc(), "upstream_proxy: no parent (expected: https, http or both, e.g. https: http://proxy.corp:3128)");
        }
        List<UpstreamProxy.NoProxy> noProxy = new ArrayList<>();
        Node np = value(m, "no_proxy");
        if (np != null && !isNull(np)) {
            ListNode list = in.list(np, "upstream_proxy.no_proxy");
            if (list != null) {
                for (int i = 0; i < list.items().size(); i++) {
                    Node item = list.items().get(i);
                    String path = "upstream_proxy.no_proxy[" + i + "]";
                    String text = in.string(item, path);
                    if (text == null) {
                        continue;
                    }
                    UpstreamProxy.NoProxy entry = noProxyEntry(text);
                    if (entry == null) {
                        in.error(item.loc(), path + ": " + text + " (expected: *, a name such as corp.example,"
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
            String text = in.string(af, "upstream_proxy.auth_file");
            if (text != null) {
                credentials = credentials(af, text);
            }
        }
        UpstreamProxy.ConnectBy connectBy = UpstreamProxy.ConnectBy.ADDRESS;
        Node cb = value(m, "connect_by");
        if (cb != null && !isNull(cb)) {
            String text = in.string(cb, "upstream_proxy.connect_by");
            if ("hostname".equals(text)) {
                connectBy = UpstreamProxy.ConnectBy.HOSTNAME;
            } else if (text != null && !"address".equals(text)) {
                in.error(cb.loc(), "upstream_proxy.connect_by: " + text + " (expected: address or hostname)");
            }
        }
        return new UpstreamProxy(https, http, noProxy, credentials, connectBy);
    }

    /** {@code http://host:port[/]}: a parent reached over plain TCP; credentials only in auth_file. */
    UpstreamProxy.@Nullable Parent parent(@Nullable Node node, String path) {
        if (node == null || isNull(node)) {
            return null;
        }
        String text = in.string(node, path);
        if (text == null) {
            return null;
        }
        String expected = " (expected: http://host:port, e.g. http://proxy.corp.example:3128)";
        if (!text.regionMatches(true, 0, "http://", 0, 7)) {
            in.error(node.loc(), path + ": " + (text.regionMatches(true, 0, "https://", 0, 8)
                    ? "TLS to the parent is not supported" : "not an http:// URL") + expected);
            return null;
        }
        String rest = text.substring(7);
        if (rest.endsWith("/")) {
            rest = rest.substring(0, rest.length() - 1);
        }
        if (rest.indexOf('@') >= 0) {
            // Never echo the text: it holds a credential.
            in.error(node.loc(), path + ": credentials in the URL (expected: the URL without them, and"
                    + " upstream_proxy.auth_file)");
            return null;
        }
        int colon = rest.lastIndexOf(':');
        if (rest.isEmpty() || colon < 0 || rest.endsWith("]") || rest.indexOf('/') >= 0) {
            in.error(node.loc(), path + ": " + text + expected);
            return null;
        }
        try {
            Target t = TargetParser.parseAuthority(rest);
            return new UpstreamProxy.Parent(t.host(), t.port());
        } catch (MalformedTargetException | IllegalArgumentException e) {
            in.error(node.loc(), path + ": " + text + expected);
            return null;
        }
    }

    static UpstreamProxy.@Nullable NoProxy noProxyEntry(String raw) {
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
    UpstreamProxy.@Nullable ParentCredentials credentials(Node node, String text) {
        String path = "upstream_proxy.auth_file";
        String content;
        try {
            Path file = Path.of(text);
            if (!file.isAbsolute() && !in.source.startsWith("embedded:")) {
                Path base = Path.of(in.source).toAbsolutePath().getParent();
                file = base == null ? file : base.resolve(file);
            }
            content = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException | InvalidPathException | java.io.UncheckedIOException e) {
            in.error(node.loc(), path + ": " + text + ": cannot read (" + e.getClass().getSimpleName()
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
            in.error(node.loc(), path + ": " + text + ": not one line of user:password (expected: a non-empty"
                    + " user name, a colon, the password; no control characters)");
            return null;
        }
        return new UpstreamProxy.ParentCredentials(content.substring(0, colon), content.substring(colon + 1));
    }
}
