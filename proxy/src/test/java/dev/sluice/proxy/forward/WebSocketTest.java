package dev.sluice.proxy.forward;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * WebSocket through Sluice over real sockets (RFC 6455): a Node {@code ws} origin (plain and TLS), a
 * hand-written client on a socket for {@code ws://} through the explicit listener (absolute-form), and
 * java.net.http's WebSocket for {@code wss://} to an intercepted host (CONNECT, then Sluice's TLS).
 */
class WebSocketTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String HOST = "ws.test";
    private static final String KEY = "dGhlIHNhbXBsZSBub25jZQ==";
    /** Sec-WebSocket-Accept of {@link #KEY} (RFC 6455 section 1.3). */
    private static final String ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

    @TempDir
    Path dir;
    private NodeOrigin origin;
    private SluiceFixture sluice;

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private String policy(int port, String inspect) {
        return """
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                        methods: [GET]
                        paths: ["/chat/**"]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, port) + (inspect == null ? "" : inspect);
    }

    @Test
    void plainWebSocketEchoesThroughTheExplicitListenerWithOneAuditRecord() throws Exception {
        origin = NodeOrigin.start(null);
        sluice = SluiceFixture.start(policy(origin.port, null));
        try (Socket socket = new Socket()) {
            socket.connect(sluice.address(), 5000);
            socket.setSoTimeout(10_000);
            String head = handshake(socket, "http://" + HOST + ":" + origin.port + "/chat/room", "websocket");
            assertThat(head).startsWith("HTTP/1.1 101").containsIgnoringCase("sec-websocket-accept: " + ACCEPT);
            sendFrame(socket.getOutputStream(), 0x1, "hello through sluice".getBytes(StandardCharsets.UTF_8));
            Frame echo = readFrame(new DataInputStream(socket.getInputStream()));
            assertThat(echo.opcode).isEqualTo(0x1);
            assertThat(echo.text()).isEqualTo("echo:hello through sluice");
            sendFrame(socket.getOutputStream(), 0x8, new byte[] {0x03, (byte) 0xE8});
            assertThat(readFrame(new DataInputStream(socket.getInputStream())).opcode).isEqualTo(0x8);
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("websocket.mode").asText()).isEqualTo("plain");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(101);
        assertThat(record.path("url.path").asText()).isEqualTo("/chat/room");
        assertThat(record.path("bytes.sent").asLong()).isGreaterThan(20);
        assertThat(record.path("bytes.received").asLong()).isGreaterThan(20);
        assertThat(record.has("duration_ms")).isTrue();
        assertThat(origin.received()).contains("hello through sluice");
        assertThat(sluice.audit().stream().filter(r -> "/chat/room".equals(r.path("url.path").asText()))).hasSize(1);
    }

    @Test
    void aWebSocketToADeniedPathIsRefusedBeforeAnyDialAndH2cStaysRefused() throws Exception {
        origin = NodeOrigin.start(null);
        sluice = SluiceFixture.start(policy(origin.port, null));
        try (Socket socket = new Socket()) {
            socket.connect(sluice.address(), 5000);
            socket.setSoTimeout(10_000);
            String head = handshake(socket, "http://" + HOST + ":" + origin.port + "/other", "websocket");
            assertThat(head).startsWith("HTTP/1.1 403");
        }
        try (Socket socket = new Socket()) {
            socket.connect(sluice.address(), 5000);
            socket.setSoTimeout(10_000);
            String head = handshake(socket, "http://" + HOST + ":" + origin.port + "/chat/x", "h2c");
            assertThat(head).startsWith("HTTP/1.1 501");
        }
        JsonNode h2c = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "upgrade_not_supported".equals(r.path("reason").asText())).findFirst().orElse(null),
                r -> r != null);
        assertThat(h2c.path("error").asText()).contains("h2c");
        assertThat(origin.opened()).isEmpty();
    }

    // ---- intercepted host (wss://) -------------------------------------------------------------

    private void startIntercepted(String websocketKey) throws Exception {
        startIntercepted("{ redact: false" + (websocketKey == null ? "" : ", websocket: " + websocketKey) + " }", "");
    }

    private void startIntercepted(String entry, String more) throws Exception {
        startIntercepted(entry, more, false);
    }

    private void startIntercepted(String entry, String more, boolean deflate) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = NodeOrigin.start(tls, deflate);
        sluice = SluiceFixture.start(policy(origin.port, """
                inspect:
                  %s: %s
                tls:
                  extra_trust:
                    - "%s"
                """.formatted(HOST, entry, tls.caPem().toAbsolutePath()) + more));
    }

    /** A made-up key of the OpenAI shape (never a real one), as the detector tests build it. */
    private static String openAiKey() {
        String urlsafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        java.util.Random random = new java.util.Random(7);
        StringBuilder b = new StringBuilder("sk-").append("proj-");
        for (int i = 0; i < 74; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        b.append("T3Blbk").append("FJ");
        for (int i = 0; i < 74; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.toString();
    }

    /** Collects whole text messages and the close code of a java.net.http WebSocket. */
    private static final class Collector implements WebSocket.Listener {
        final List<String> messages = new CopyOnWriteArrayList<>();
        final CompletableFuture<Integer> closed = new CompletableFuture<>();
        private final StringBuilder partial = new StringBuilder();

        @Override
        public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
            partial.append(data);
            if (last) {
                messages.add(partial.toString());
                partial.setLength(0);
            }
            webSocket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket webSocket, int statusCode, String reason) {
            closed.complete(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket webSocket, Throwable error) {
            closed.completeExceptionally(error);
        }
    }

    @Test
    void inspectModeRedactsAKeySplitAcrossFragmentsOfAClientTextMessage() throws Exception {
        startIntercepted("{}", "");
        String key = openAiKey();
        String message = "{\"type\":\"response.create\",\"input\":\"my key is " + key + " ok\"}";
        int split = message.indexOf(key) + key.length() / 2;
        Collector collector = new Collector();
        WebSocket ws = openJavaWebSocket(collector).get(20, TimeUnit.SECONDS);
        ws.sendText(message.substring(0, split), false).get(10, TimeUnit.SECONDS);
        ws.sendText(message.substring(split), true).get(10, TimeUnit.SECONDS);
        List<String> seen = origin.received();
        assertThat(seen).singleElement().satisfies(text -> {
            assertThat(text).doesNotContain(key).doesNotContain("T3Blbk" + "FJ");
            assertThat(text).contains("[REDACTED:openai-api-key]").startsWith("{\"type\":\"response.create\"");
            assertThat(JSON.readTree(text).path("input").asText()).startsWith("my key is ");
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> !collector.messages.isEmpty());
        assertThat(collector.messages.get(0)).startsWith("echo:").doesNotContain(key);
        ws.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(10, TimeUnit.SECONDS);
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("websocket.mode").asText()).isEqualTo("inspect");
        assertThat(record.path("websocket.messages_sent").asLong()).isEqualTo(1);
        assertThat(record.path("websocket.messages_received").asLong()).isEqualTo(1);
        assertThat(record.path("redactions").path("openai-api-key").asLong()).isEqualTo(1);
        assertThat(record.toString()).doesNotContain(key);
    }

    @Test
    void aClientMessageOverMaxWebsocketMessageClosesBothLegsWith1009() throws Exception {
        startIntercepted("{}", """
                limits:
                  max_websocket_message: 1KiB
                """);
        Collector collector = new Collector();
        WebSocket ws = openJavaWebSocket(collector).get(20, TimeUnit.SECONDS);
        ws.sendText("small", true).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(10)).until(() -> collector.messages.contains("echo:small"));
        String part = "x".repeat(700);
        ws.sendText(part, false).get(10, TimeUnit.SECONDS);
        ws.sendText(part, true).get(10, TimeUnit.SECONDS);
        assertThat(collector.closed.get(10, TimeUnit.SECONDS)).isEqualTo(1009);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(origin.events.toString())
                .contains("{\"close\":1009}"));
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("error").asText()).contains("max_websocket_message");
        assertThat(record.path("websocket.messages_sent").asLong()).isEqualTo(1);
        assertThat(origin.received()).containsExactly("small");
    }

    private CompletableFuture<WebSocket> openJavaWebSocket(WebSocket.Listener listener) throws Exception {
        HttpClient client = HttpClient.newBuilder()
                .proxy(ProxySelector.of(sluice.address()))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .connectTimeout(Duration.ofSeconds(10)).build();
        return client.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10))
                .buildAsync(URI.create("wss://" + HOST + ":" + origin.port + "/chat/tls"), listener);
    }

    @Test
    void relayModePassesFramesToAnInterceptedHost() throws Exception {
        startIntercepted("relay");
        CompletableFuture<String> reply = new CompletableFuture<>();
        WebSocket ws = openJavaWebSocket(new WebSocket.Listener() {
            @Override
            public CompletionStage<?> onText(WebSocket webSocket, CharSequence data, boolean last) {
                reply.complete(data.toString());
                return null;
            }
        }).get(20, TimeUnit.SECONDS);
        ws.sendText("over tls", true).get(10, TimeUnit.SECONDS);
        assertThat(reply.get(10, TimeUnit.SECONDS)).isEqualTo("echo:over tls");
        ws.sendClose(WebSocket.NORMAL_CLOSURE, "bye").get(10, TimeUnit.SECONDS);
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("websocket.mode").asText()).isEqualTo("relay");
        assertThat(record.path("tls.mode").asText()).isEqualTo("intercept");
        assertThat(record.path("http.response.status_code").asInt()).isEqualTo(101);
        assertThat(record.path("bytes.sent").asLong()).isPositive();
        assertThat(origin.received()).contains("over tls");
    }

    @Test
    void refuseModeAnswers403WebsocketRefusedWithOneRecord() throws Exception {
        startIntercepted("refuse");
        CompletableFuture<WebSocket> opening = openJavaWebSocket(new WebSocket.Listener() { });
        try {
            opening.get(20, TimeUnit.SECONDS);
            throw new AssertionError("the upgrade was not refused");
        } catch (java.util.concurrent.ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(WebSocketHandshakeException.class);
            assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(403);
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "websocket_refused".equals(r.path("reason").asText())).findFirst().orElse(null),
                r -> r != null);
        assertThat(record.path("url.path").asText()).isEqualTo("/chat/tls");
        assertThat(sluice.audit().stream().filter(r -> "/chat/tls".equals(r.path("url.path").asText()))).hasSize(1);
        assertThat(origin.opened()).isEmpty();
    }

    /** A credential for the intercepted WebSocket host, read from a file (never a real value). */
    private String credentialSection() throws IOException {
        Path secret = dir.resolve("ws-secret.txt");
        java.nio.file.Files.writeString(secret, "real-ws-secret-value-0123456789");
        return """
                credentials:
                  wskey:
                    source: { file: "%s" }
                    inject: { hosts: [%s], ports: [%d], header: Authorization }
                """.formatted(secret.toAbsolutePath(), HOST, origin.port);
    }

    private void startInterceptedWithCredential(String websocket) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = NodeOrigin.start(tls, false);
        String base = policy(origin.port, """
                inspect:
                  %s: { redact: true, websocket: %s }
                tls:
                  extra_trust:
                    - "%s"
                """.formatted(HOST, websocket, tls.caPem().toAbsolutePath()) + credentialSection());
        sluice = SluiceFixture.start(base.replace("        paths: [\"/chat/**\"]\n",
                "        paths: [\"/chat/**\"]\n    credentials: [wskey]\n"));
    }

    /**
     * A credential is never injected into a WebSocket handshake: the origin's messages are relayed as they
     * come, so a key it echoed would reach the sandbox unscrubbed. The handshake is refused, fail closed.
     */
    @Test
    void aHandshakeThatWouldCarryAnInjectedCredentialIsRefused() throws Exception {
        startInterceptedWithCredential("inspect");
        String placeholder = dev.sluice.proxy.credential.PlaceholderKey.loadOrCreate(sluice.dataDir())
                .placeholder("default", "wskey");
        HttpClient client = HttpClient.newBuilder()
                .proxy(ProxySelector.of(sluice.address()))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .connectTimeout(Duration.ofSeconds(10)).build();
        CompletableFuture<WebSocket> opening = client.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10))
                .header("Authorization", "Bearer " + placeholder)
                .buildAsync(URI.create("wss://" + HOST + ":" + origin.port + "/chat/tls"), new WebSocket.Listener() { });
        try {
            opening.get(20, TimeUnit.SECONDS);
            throw new AssertionError("a handshake carrying a credential was upgraded");
        } catch (java.util.concurrent.ExecutionException e) {
            assertThat(e.getCause()).isInstanceOf(WebSocketHandshakeException.class);
            assertThat(((WebSocketHandshakeException) e.getCause()).getResponse().statusCode()).isEqualTo(403);
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> "/chat/tls".equals(r.path("url.path").asText())).findFirst().orElse(null),
                r -> r != null);
        assertThat(record.path("reason").asText()).isEqualTo("websocket_refused");
        assertThat(record.path("rule").asText()).isEqualTo("credentials.wskey");
        assertThat(record.has("credentials")).isFalse();
        assertThat(origin.opened()).isEmpty();
    }

    /** A placeholder inside a client message (raw or encoded) never reaches the origin: the connection closes 1008. */
    @Test
    void aPlaceholderInAClientMessageClosesBothLegsWith1008() throws Exception {
        startInterceptedWithCredential("inspect");
        String placeholder = dev.sluice.proxy.credential.PlaceholderKey.loadOrCreate(sluice.dataDir())
                .placeholder("default", "wskey");
        Collector collector = new Collector();
        WebSocket ws = openJavaWebSocket(collector).get(20, TimeUnit.SECONDS);
        ws.sendText("hello", true).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(10)).until(() -> collector.messages.contains("echo:hello"));
        String encoded = java.util.Base64.getEncoder().encodeToString(("x:" + placeholder)
                .getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"auth\":\"" + encoded + "\"}", true).get(10, TimeUnit.SECONDS);
        assertThat(collector.closed.get(10, TimeUnit.SECONDS)).isEqualTo(1008);
        assertThat(origin.received()).containsExactly("hello");
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("error").asText()).contains("credential_host_mismatch");
        assertThat(record.toString()).doesNotContain(placeholder);
    }

    /** Runs proxy/src/test/node/ws-client.js through Sluice and returns its JSON lines. */
    private List<JsonNode> nodeClient(String url, String... fragments) throws Exception {
        Path nodeDir = Path.of("src/test/node").toAbsolutePath();
        List<String> command = new java.util.ArrayList<>(List.of("node", nodeDir.resolve("ws-client.js").toString(),
                "127.0.0.1", String.valueOf(sluice.port()), url));
        command.addAll(List.of(fragments));
        ProcessBuilder builder = new ProcessBuilder(command).directory(nodeDir.toFile())
                .redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().put("NODE_EXTRA_CA_CERTS", sluice.dataDir().resolve("ca.crt.pem").toString());
        Process p = builder.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        List<JsonNode> lines = new java.util.ArrayList<>();
        for (String line : out.split("\n")) {
            if (!line.isBlank()) {
                lines.add(JSON.readTree(line));
            }
        }
        return lines;
    }

    @Test
    void nodesWsClientThroughAConnectTunnelHasItsFragmentedKeyRedactedInInspectMode() throws Exception {
        startIntercepted("{}", "");
        String key = openAiKey();
        int half = key.length() / 2;
        List<JsonNode> lines = nodeClient("wss://" + HOST + ":" + origin.port + "/chat/node",
                "token " + key.substring(0, half), key.substring(half) + " end");
        assertThat(lines.toString()).contains("\"open\"").doesNotContain(key);
        assertThat(lines).anySatisfy(l -> assertThat(l.path("text").asText()).startsWith("echo:token [REDACTED:"));
        assertThat(origin.received()).singleElement().satisfies(text ->
                assertThat(text).isEqualTo("token [REDACTED:openai-api-key] end"));
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("websocket.mode").asText()).isEqualTo("inspect");
        assertThat(record.path("redactions").path("openai-api-key").asLong()).isEqualTo(1);
    }

    @Test
    void permessageDeflateIsNegotiatedOnBothLegsAndAKeyAcrossDeflatedFragmentsArrivesRedacted() throws Exception {
        startIntercepted("{}", "", true);
        String key = openAiKey();
        int half = key.length() / 2;
        List<JsonNode> lines = nodeClient("wss://" + HOST + ":" + origin.port + "/chat/deflate",
                "token " + key.substring(0, half), key.substring(half) + " end");
        JsonNode open = lines.stream().filter(l -> l.has("open")).findFirst().orElseThrow();
        assertThat(open.path("extensions").asText()).contains("permessage-deflate");
        assertThat(lines).anySatisfy(l -> assertThat(l.path("text").asText())
                .isEqualTo("echo:token [REDACTED:openai-api-key] end"));
        assertThat(origin.received()).containsExactly("token [REDACTED:openai-api-key] end");
        JsonNode originOpen = origin.events.stream().filter(e -> e.has("open")).findFirst().orElseThrow();
        assertThat(originOpen.path("offered").asText()).isEqualTo("permessage-deflate");
        assertThat(originOpen.path("extensions").asText()).contains("permessage-deflate");
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("openai-api-key").asLong()).isEqualTo(1);
        assertThat(record.path("websocket.messages_sent").asLong()).isEqualTo(1);
        assertThat(record.path("websocket.messages_received").asLong()).isEqualTo(1);
    }

    @Test
    void aBinaryMessageWithAKeyClosesBothLegsWith1008UnderRedactionBinaryBlock() throws Exception {
        startIntercepted("{}", "");
        Collector collector = new Collector();
        WebSocket ws = openJavaWebSocket(collector).get(20, TimeUnit.SECONDS);
        ws.sendBinary(java.nio.ByteBuffer.wrap(("\u0000\u0001bin " + openAiKey()).getBytes(StandardCharsets.UTF_8)),
                true).get(10, TimeUnit.SECONDS);
        assertThat(collector.closed.get(10, TimeUnit.SECONDS)).isEqualTo(1008);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(origin.events.toString())
                .contains("{\"close\":1008}"));
        assertThat(origin.events).noneMatch(e -> e.has("binary"));
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("error").asText()).contains("redaction.binary");
        assertThat(record.path("redactions").path("openai-api-key").asLong()).isEqualTo(1);
    }

    @Test
    void aSingleFrameOverMaxWebsocketMessageClosesBothLegsWith1009() throws Exception {
        startIntercepted("{ redact: false, websocket: inspect }", """
                limits:
                  max_websocket_message: 1KiB
                """);
        Collector collector = new Collector();
        WebSocket ws = openJavaWebSocket(collector).get(20, TimeUnit.SECONDS);
        ws.sendText("y".repeat(4000), true).get(10, TimeUnit.SECONDS);
        assertThat(collector.closed.get(10, TimeUnit.SECONDS)).isEqualTo(1009);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(origin.events.toString())
                .contains("{\"close\":1009}"));
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.has("websocket.mode")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("error").asText()).contains("max_websocket_message");
    }

    // ---- helpers ---------------------------------------------------------------------------------

    private static String handshake(Socket socket, String target, String upgrade) throws IOException {
        URI uri = URI.create(target);
        String request = "GET " + target + " HTTP/1.1\r\nHost: " + uri.getAuthority() + "\r\nUpgrade: " + upgrade
                + "\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + KEY + "\r\nSec-WebSocket-Version: 13\r\n\r\n";
        socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        var in = socket.getInputStream();
        while (true) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.write(b);
            byte[] h = head.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                break;
            }
        }
        return head.toString(StandardCharsets.US_ASCII);
    }

    /** Writes one masked, final frame (RFC 6455 section 5.2), payload under 126 bytes. */
    private static void sendFrame(OutputStream out, int opcode, byte[] payload) throws IOException {
        byte[] mask = {0x11, 0x22, 0x33, 0x44};
        ByteArrayOutputStream frame = new ByteArrayOutputStream();
        frame.write(0x80 | opcode);
        frame.write(0x80 | payload.length);
        frame.write(mask);
        for (int i = 0; i < payload.length; i++) {
            frame.write(payload[i] ^ mask[i % 4]);
        }
        out.write(frame.toByteArray());
        out.flush();
    }

    private record Frame(int opcode, byte[] payload) {
        String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }
    }

    /** Reads one unmasked server frame. */
    private static Frame readFrame(DataInputStream in) throws IOException {
        int b0 = in.readUnsignedByte();
        int len = in.readUnsignedByte() & 0x7F;
        if (len == 126) {
            len = in.readUnsignedShort();
        } else if (len == 127) {
            len = (int) in.readLong();
        }
        byte[] payload = new byte[len];
        in.readFully(payload);
        return new Frame(b0 & 0x0F, payload);
    }

    /** The Node {@code ws} origin of proxy/src/test/node/ws-origin.js. */
    static final class NodeOrigin implements AutoCloseable {
        final Process process;
        final int port;
        final List<JsonNode> events = new CopyOnWriteArrayList<>();

        private NodeOrigin(Process process, int port) {
            this.process = process;
            this.port = port;
        }

        static NodeOrigin start(TestTls tls) throws Exception {
            return start(tls, false);
        }

        static NodeOrigin start(TestTls tls, boolean deflate) throws Exception {
            Path nodeDir = Path.of("src/test/node").toAbsolutePath();
            if (!Files.isDirectory(nodeDir.resolve("node_modules/ws"))) {
                Process install = new ProcessBuilder("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
                        .directory(nodeDir.toFile()).redirectErrorStream(true).start();
                String log = new String(install.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(install.waitFor(120, TimeUnit.SECONDS)).isTrue();
                assertThat(install.exitValue()).as("npm ci: " + log).isZero();
            }
            List<String> command = new java.util.ArrayList<>(List.of("node", nodeDir.resolve("ws-origin.js").toString()));
            if (tls != null) {
                command.add(tls.keystore().toString());
                command.add(tls.keystorePassword());
                if (deflate) {
                    command.add("deflate");
                }
            }
            Process p = new ProcessBuilder(command).directory(nodeDir.toFile())
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            String first = out.readLine();
            assertThat(first).as("ws-origin.js first line").startsWith("LISTENING ");
            NodeOrigin origin = new NodeOrigin(p, Integer.parseInt(first.substring("LISTENING ".length()).trim()));
            Thread reader = new Thread(() -> {
                try {
                    for (String line; (line = out.readLine()) != null; ) {
                        origin.events.add(JSON.readTree(line));
                    }
                } catch (IOException e) {
                    // The process ended.
                }
            }, "ws-origin-reader");
            reader.setDaemon(true);
            reader.start();
            return origin;
        }

        List<String> received() {
            await().atMost(Duration.ofSeconds(10)).until(() -> events.stream().anyMatch(e -> e.has("text")));
            return events.stream().filter(e -> e.has("text")).map(e -> e.path("text").asText()).toList();
        }

        List<String> opened() {
            return events.stream().filter(e -> e.has("open")).map(e -> e.path("open").asText()).toList();
        }

        @Override
        public void close() {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
