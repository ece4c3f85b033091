package dev.sluice.proxy.http;

import org.jspecify.annotations.Nullable;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The WebSocket opening handshake as a proxy sees it (RFC 6455 section 4): which upgrade requests are
 * WebSocket handshakes Sluice relays, the fields that go on to the origin, and whether the origin's
 * {@code 101} accepts that handshake. Every other upgrade (h2c, {@code TLS/1.0}, an unknown token)
 * stays refused by the request phase.
 */
public final class WebSocketUpgrade {

    /** The GUID of RFC 6455 section 1.3 appended to the key before hashing. */
    private static final String GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

    private static final String WEBSOCKET_PREFIX = "sec-websocket-";

    private WebSocketUpgrade() {
    }

    /**
     * Returns why {@code request} is not a WebSocket opening handshake Sluice relays, or null when it is:
     * a {@code GET} over HTTP/1.1 whose only {@code Upgrade} token is {@code websocket}, with
     * {@code upgrade} in {@code Connection}, a {@code Sec-WebSocket-Key} of 16 bytes in base64,
     * {@code Sec-WebSocket-Version: 13} (RFC 6455 section 4.1) and no body.
     *
     * @return a short phrase for the record ({@code "not a websocket upgrade"} for h2c and the like), or null
     */
    public static @Nullable String problem(HttpRequest request) {
        HttpHeaders headers = request.headers();
        List<String> tokens = tokens(headers.getAll(HttpHeaderNames.UPGRADE));
        if (tokens.size() != 1 || !tokens.get(0).equals("websocket")) {
            return "not a websocket upgrade";
        }
        if (!HttpMethod.GET.equals(request.method()) || !HttpVersion.HTTP_1_1.equals(request.protocolVersion())) {
            return "websocket upgrade must be a GET over HTTP/1.1";
        }
        if (!tokens(headers.getAll(HttpHeaderNames.CONNECTION)).contains("upgrade")) {
            return "websocket upgrade without Connection: upgrade";
        }
        List<String> keys = headers.getAll(HttpHeaderNames.SEC_WEBSOCKET_KEY);
        if (keys.size() != 1 || !validKey(keys.get(0).trim())) {
            return "websocket upgrade without a valid Sec-WebSocket-Key";
        }
        if (!"13".equals(headers.get(HttpHeaderNames.SEC_WEBSOCKET_VERSION, "").trim())) {
            return "websocket upgrade with a Sec-WebSocket-Version other than 13";
        }
        if (headers.contains(HttpHeaderNames.TRANSFER_ENCODING)
                || !"0".equals(headers.get(HttpHeaderNames.CONTENT_LENGTH, "0").trim())) {
            return "websocket upgrade with a body";
        }
        return null;
    }

    /**
     * Puts the handshake back on a request whose hop-by-hop fields were stripped ({@link HopByHop#strip}):
     * {@code Upgrade: websocket}, {@code Connection: Upgrade} and every {@code Sec-WebSocket-*} field of
     * {@code original}.
     *
     * @param original the client's request headers
     * @param upstream the stripped headers that go to the origin, changed in place
     */
    public static void restore(HttpHeaders original, HttpHeaders upstream) {
        upstream.set(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET);
        upstream.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
        copyWebSocketFields(original, upstream);
    }

    /**
     * Answers whether {@code response} is a {@code 101} that accepts the handshake whose key is
     * {@code key}: {@code Upgrade: websocket} and {@code Sec-WebSocket-Accept} equal to
     * base64(SHA-1(key + GUID)) (RFC 6455 section 4.2.2).
     */
    public static boolean accepts(HttpResponse response, String key) {
        if (response.status().code() != 101 || key == null) {
            return false;
        }
        List<String> tokens = tokens(response.headers().getAll(HttpHeaderNames.UPGRADE));
        String accept = response.headers().get(HttpHeaderNames.SEC_WEBSOCKET_ACCEPT);
        return tokens.equals(List.of("websocket")) && accept != null && accept.trim().equals(acceptFor(key.trim()));
    }

    /** Returns the {@code Sec-WebSocket-Accept} value for {@code key} (RFC 6455 section 4.2.2). */
    public static String acceptFor(String key) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-1").digest((key + GUID).getBytes(StandardCharsets.US_ASCII));
            return Base64.getEncoder().encodeToString(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 unavailable", e);
        }
    }

    /** Copies every {@code Sec-WebSocket-*} field of {@code from} into {@code to}. */
    public static void copyWebSocketFields(HttpHeaders from, HttpHeaders to) {
        for (Map.Entry<String, String> e : from) {
            if (e.getKey().toLowerCase(Locale.ROOT).startsWith(WEBSOCKET_PREFIX)) {
                to.add(e.getKey(), e.getValue());
            }
        }
    }

    private static boolean validKey(String key) {
        try {
            return Base64.getDecoder().decode(key).length == 16;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static List<String> tokens(List<String> values) {
        List<String> out = new ArrayList<>();
        for (String value : values) {
            for (String token : value.split(",")) {
                String t = token.trim().toLowerCase(Locale.ROOT);
                if (!t.isEmpty()) {
                    out.add(t);
                }
            }
        }
        return out;
    }
}
