package dev.sluice.proxy.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import org.junit.jupiter.api.Test;

/** Which upgrade requests are WebSocket handshakes Sluice relays (RFC 6455 section 4.1), and the accept check. */
class WebSocketUpgradeTest {

    private static final String KEY = "dGhlIHNhbXBsZSBub25jZQ==";

    private static HttpRequest handshake(String upgrade) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/chat");
        r.headers().set("Upgrade", upgrade).set("Connection", "keep-alive, Upgrade")
                .set("Sec-WebSocket-Key", KEY).set("Sec-WebSocket-Version", "13");
        return r;
    }

    @Test
    void onlyAWellFormedWebSocketHandshakeIsOne() {
        assertThat(WebSocketUpgrade.problem(handshake("websocket"))).isNull();
        assertThat(WebSocketUpgrade.problem(handshake("WebSocket"))).isNull();
        assertThat(WebSocketUpgrade.problem(handshake("h2c"))).isEqualTo("not a websocket upgrade");
        assertThat(WebSocketUpgrade.problem(handshake("TLS/1.0"))).isEqualTo("not a websocket upgrade");
        assertThat(WebSocketUpgrade.problem(handshake("websocket, h2c"))).isEqualTo("not a websocket upgrade");
        HttpRequest noKey = handshake("websocket");
        noKey.headers().set("Sec-WebSocket-Key", "c2hvcnQ=");
        assertThat(WebSocketUpgrade.problem(noKey)).contains("Sec-WebSocket-Key");
        HttpRequest oldVersion = handshake("websocket");
        oldVersion.headers().set("Sec-WebSocket-Version", "8");
        assertThat(WebSocketUpgrade.problem(oldVersion)).contains("Version");
        HttpRequest withBody = handshake("websocket");
        withBody.headers().set("Content-Length", "5");
        assertThat(WebSocketUpgrade.problem(withBody)).isEqualTo("websocket upgrade with a body");
        HttpRequest post = handshake("websocket");
        post.setMethod(HttpMethod.POST);
        assertThat(WebSocketUpgrade.problem(post)).contains("GET");
        HttpRequest noConnection = handshake("websocket");
        noConnection.headers().set("Connection", "keep-alive");
        assertThat(WebSocketUpgrade.problem(noConnection)).contains("Connection");
    }

    @Test
    void theAcceptIsTheRfcValue() {
        assertThat(WebSocketUpgrade.acceptFor(KEY)).isEqualTo("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        HttpResponse ok = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.SWITCHING_PROTOCOLS);
        ok.headers().set("Upgrade", "websocket").set("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assertThat(WebSocketUpgrade.accepts(ok, KEY)).isTrue();
        ok.headers().set("Sec-WebSocket-Accept", "AAAA");
        assertThat(WebSocketUpgrade.accepts(ok, KEY)).isFalse();
    }
}
