package dev.sluice.proxy.http;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Removes hop-by-hop header fields (RFC 9110 section 7.6.1) from a message before it crosses Sluice:
 * every field named in {@code Connection}, then {@code Connection}, {@code Keep-Alive},
 * {@code Proxy-Connection}, {@code Proxy-Authorization}, {@code Proxy-Authenticate}, {@code TE},
 * {@code Trailer}, {@code Upgrade} and {@code HTTP2-Settings} (connection-specific by RFC 7540
 * section 3.2.1). On a message that asked for an upgrade ({@link #upgradeRequested}), every
 * {@code Sec-WebSocket-*} field goes too (RFC 6455 section 11.3): without its upgrade it means nothing
 * to the next hop. {@code Transfer-Encoding} is kept only as the framing the Netty encoder re-applies:
 * Sluice re-frames each message itself and never forwards any other coding.
 */
public final class HopByHop {

    /** The connection-specific field of an h2c upgrade (RFC 7540 section 3.2.1). */
    public static final String HTTP2_SETTINGS = "http2-settings";

    private static final String WEBSOCKET_PREFIX = "sec-websocket-";

    private static final List<CharSequence> ALWAYS = List.of(
            HttpHeaderNames.CONNECTION, HttpHeaderNames.KEEP_ALIVE, "proxy-connection",
            HttpHeaderNames.PROXY_AUTHORIZATION, HttpHeaderNames.PROXY_AUTHENTICATE, HttpHeaderNames.TE,
            HttpHeaderNames.TRAILER, HttpHeaderNames.UPGRADE, HTTP2_SETTINGS);

    private HopByHop() {
    }

    /**
     * Answers whether {@code headers} ask for a protocol upgrade (RFC 9110 section 7.8): an
     * {@code Upgrade} field (any value, e.g. {@code websocket} or {@code h2c}), or the {@code upgrade}
     * token in {@code Connection} or {@code Proxy-Connection} even without the field.
     */
    public static boolean upgradeRequested(HttpHeaders headers) {
        return headers.contains(HttpHeaderNames.UPGRADE) || connectionTokens(headers).contains("upgrade");
    }

    /**
     * Returns the protocols an upgrade asks for, for a record: the {@code Upgrade} values with anything
     * but letters, digits and {@code ./-_,} removed, at most 64 characters; {@code ""} when the upgrade
     * is only named in {@code Connection}.
     */
    public static String upgradeProtocols(HttpHeaders headers) {
        StringBuilder out = new StringBuilder();
        for (String value : headers.getAll(HttpHeaderNames.UPGRADE)) {
            if (out.length() > 0 && out.length() < 64) {
                // a repeated field is one list (RFC 9110 section 5.3)
                out.append(", ");
            }
            for (int i = 0; i < value.length() && out.length() < 64; i++) {
                char c = value.charAt(i);
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || ".-_/,".indexOf(c) >= 0) {
                    out.append(c);
                } else if (c == ' ' && out.length() > 0 && out.charAt(out.length() - 1) == ',') {
                    out.append(c);
                }
            }
        }
        return out.toString();
    }

    /** Removes the hop-by-hop fields from {@code headers}, in place. */
    public static void strip(HttpHeaders headers) {
        boolean upgrade = upgradeRequested(headers);
        for (String name : connectionTokens(headers)) {
            // Never let Connection remove the framing or Host itself: those are rebuilt by Sluice.
            if (!name.equals("transfer-encoding") && !name.equals("content-length") && !name.equals("host")) {
                headers.remove(name);
            }
        }
        for (CharSequence name : ALWAYS) {
            headers.remove(name);
        }
        if (upgrade) {
            List<String> websocket = new ArrayList<>();
            for (String name : headers.names()) {
                if (name.toLowerCase(Locale.ROOT).startsWith(WEBSOCKET_PREFIX)) {
                    websocket.add(name);
                }
            }
            websocket.forEach(headers::remove);
        }
    }

    /** The field names listed in {@code Connection} and {@code Proxy-Connection}, lowercased. */
    private static List<String> connectionTokens(HttpHeaders headers) {
        List<String> named = new ArrayList<>();
        for (CharSequence field : List.of(HttpHeaderNames.CONNECTION, "proxy-connection")) {
            for (String value : headers.getAll(field)) {
                for (String token : value.split(",")) {
                    String name = token.trim().toLowerCase(Locale.ROOT);
                    if (!name.isEmpty()) {
                        named.add(name);
                    }
                }
            }
        }
        return named;
    }
}
