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
 * {@code Trailer} and {@code Upgrade}. {@code Transfer-Encoding} is kept only as the framing the
 * Netty encoder re-applies: Sluice re-frames each message itself and never forwards any other coding.
 */
public final class HopByHop {

    private static final List<CharSequence> ALWAYS = List.of(
            HttpHeaderNames.CONNECTION, HttpHeaderNames.KEEP_ALIVE, "proxy-connection",
            HttpHeaderNames.PROXY_AUTHORIZATION, HttpHeaderNames.PROXY_AUTHENTICATE, HttpHeaderNames.TE,
            HttpHeaderNames.TRAILER, HttpHeaderNames.UPGRADE);

    private HopByHop() {
    }

    /** Removes the hop-by-hop fields from {@code headers}, in place. */
    public static void strip(HttpHeaders headers) {
        List<String> named = new ArrayList<>();
        for (String value : headers.getAll(HttpHeaderNames.CONNECTION)) {
            for (String token : value.split(",")) {
                String name = token.trim().toLowerCase(Locale.ROOT);
                if (!name.isEmpty()) {
                    named.add(name);
                }
            }
        }
        for (String value : headers.getAll("proxy-connection")) {
            for (String token : value.split(",")) {
                String name = token.trim().toLowerCase(Locale.ROOT);
                if (!name.isEmpty()) {
                    named.add(name);
                }
            }
        }
        for (String name : named) {
            // Never let Connection remove the framing or Host itself: those are rebuilt by Sluice.
            if (!name.equals("transfer-encoding") && !name.equals("content-length") && !name.equals("host")) {
                headers.remove(name);
            }
        }
        for (CharSequence name : ALWAYS) {
            headers.remove(name);
        }
    }
}
