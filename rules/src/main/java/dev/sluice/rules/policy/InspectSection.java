package dev.sluice.rules.policy;

import static dev.sluice.rules.policy.PolicyCursor.isNull;
import static dev.sluice.rules.policy.PolicyCursor.orderedSet;
import static dev.sluice.rules.policy.PolicyCursor.show;
import static dev.sluice.rules.policy.PolicyCursor.value;

import com.fasterxml.jackson.core.JsonToken;
import dev.sluice.rules.internal.YamlTree;
import dev.sluice.rules.internal.YamlTree.ListNode;
import dev.sluice.rules.internal.YamlTree.MapNode;
import dev.sluice.rules.internal.YamlTree.Node;
import dev.sluice.rules.internal.YamlTree.ScalarNode;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/** Reads {@code inspect} (hosts whose TLS Sluice terminates, their pins) and {@code tls} (extra trust). */
final class InspectSection {

    static final Set<String> INSPECT_KEYS = orderedSet("pins", "pin_mode", "redact", "websocket");
    static final Set<String> TLS_KEYS = orderedSet("extra_trust");
    static final Pattern PIN = Pattern.compile("sha256/[A-Za-z0-9+/]{43}=");

    private final PolicyCursor in;

    InspectSection(PolicyCursor in) {
        this.in = in;
    }

    Map<String, InspectedHost> inspect(@Nullable Node node) {
        Map<String, InspectedHost> hosts = new LinkedHashMap<>();
        if (node == null || isNull(node)) {
            return hosts;
        }
        MapNode m = in.map(node, "inspect");
        if (m == null) {
            return hosts;
        }
        for (YamlTree.Entry e : m.entries().values()) {
            String path = "inspect." + e.key();
            String host = in.hostPattern(new ScalarNode(e.keyLoc(), JsonToken.VALUE_STRING, e.key()), path);
            InspectedHost.PinKind kind = InspectedHost.PinKind.NONE;
            List<String> pins = new ArrayList<>();
            boolean report = false;
            boolean redact = true;
            WebSocketMode websocket = null;
            if (!isNull(e.value())) {
                MapNode entry = in.map(e.value(), path);
                if (entry == null) {
                    continue;
                }
                in.checkKeys(entry, path + ".", INSPECT_KEYS, Set.of());
                Node pinsNode = value(entry, "pins");
                if (pinsNode != null && !isNull(pinsNode)) {
                    if (pinsNode instanceof ScalarNode scalar && "tofu".equals(scalar.text())) {
                        kind = InspectedHost.PinKind.TOFU;
                    } else if (pinsNode instanceof ListNode list) {
                        kind = InspectedHost.PinKind.EXPLICIT;
                        for (int i = 0; i < list.items().size(); i++) {
                            String pin = in.string(list.items().get(i), path + ".pins[" + i + "]");
                            if (pin != null && !PIN.matcher(pin).matches()) {
                                in.error(list.items().get(i).loc(), path + ".pins[" + i + "]: " + pin
                                        + " (expected: sha256/ followed by the base64 of 32 bytes)");
                            } else if (pin != null) {
                                pins.add(pin);
                            }
                        }
                        if (list.items().isEmpty()) {
                            in.error(pinsNode.loc(), path + ".pins: empty (expected: tofu, or a list of sha256/ pins)");
                        }
                    } else {
                        in.error(pinsNode.loc(), path + ".pins: " + show(pinsNode)
                                + " (expected: tofu, or a list of sha256/ pins)");
                    }
                }
                Node mode = value(entry, "pin_mode");
                if (mode != null) {
                    String text = in.string(mode, path + ".pin_mode");
                    if ("report".equals(text)) {
                        report = true;
                    } else if (text != null && !"enforce".equals(text)) {
                        in.error(mode.loc(), path + ".pin_mode: " + text + " (expected: enforce or report)");
                    }
                }
                Node redactNode = value(entry, "redact");
                if (redactNode != null) {
                    if (redactNode instanceof ScalarNode scalar
                            && (scalar.token() == JsonToken.VALUE_TRUE || scalar.token() == JsonToken.VALUE_FALSE)) {
                        redact = scalar.token() == JsonToken.VALUE_TRUE;
                    } else {
                        in.error(redactNode.loc(), path + ".redact: " + show(redactNode) + " (expected: true or false)");
                    }
                }
                Node websocketNode = value(entry, "websocket");
                if (websocketNode != null) {
                    String text = in.string(websocketNode, path + ".websocket");
                    if (text != null) {
                        switch (text) {
                            case "refuse" -> websocket = WebSocketMode.REFUSE;
                            case "relay" -> websocket = WebSocketMode.RELAY;
                            case "inspect" -> websocket = WebSocketMode.INSPECT;
                            default -> in.error(websocketNode.loc(), path + ".websocket: " + text
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

    TlsSettings tls(@Nullable Node node) {
        if (node == null || isNull(node)) {
            return TlsSettings.NONE;
        }
        MapNode m = in.map(node, "tls");
        if (m == null) {
            return TlsSettings.NONE;
        }
        in.checkKeys(m, "tls.", TLS_KEYS, Set.of());
        List<Path> files = new ArrayList<>();
        Node extra = value(m, "extra_trust");
        if (extra != null && !isNull(extra)) {
            ListNode list = in.list(extra, "tls.extra_trust");
            if (list != null) {
                for (int i = 0; i < list.items().size(); i++) {
                    String text = in.string(list.items().get(i), "tls.extra_trust[" + i + "]");
                    if (text == null) {
                        continue;
                    }
                    try {
                        files.add(Path.of(text));
                    } catch (InvalidPathException ex) {
                        in.error(list.items().get(i).loc(), "tls.extra_trust[" + i + "]: " + text
                                + " (expected: a PEM file path)");
                    }
                }
            }
        }
        return new TlsSettings(files);
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
}
