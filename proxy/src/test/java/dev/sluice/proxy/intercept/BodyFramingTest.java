package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Request body framing on an inspected host (issue 12 item 5), over real sockets: a client writes
 * requests by hand through a CONNECT tunnel and Sluice's interception to a {@link RecordingOrigin} on
 * TLS, and the test checks what the origin received — its framing headers and the body's bytes.
 */
class BodyFramingTest {

    private static final String HOST = "api.llm.test";
    private static final String ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    @TempDir
    Path dir;
    private RecordingOrigin origin;
    private TestTls tls;
    private SluiceFixture sluice;
    private final Random random = new Random(7);

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private void start(boolean lengthRequired, String redaction, String limits) throws Exception {
        tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        origin = RecordingOrigin.tls(tls, lengthRequired);
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { redact: true }
                tls:
                  extra_trust: ["%3$s"]
                redaction:
                  %4$s
                limits:
                  %5$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath(), redaction, limits));
    }

    /** A made-up key of the Anthropic shape (never a real one), built at run time. */
    private String anthropicKey() {
        StringBuilder b = new StringBuilder("sk-ant-").append("api03-");
        String urlsafe = ALNUM + "_-";
        for (int i = 0; i < 93; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.append("AA").toString();
    }

    /** Bytes that look like a git receive-pack request: pkt-line commands, then "PACK" and binary data. */
    private byte[] gitPackLike(int size, String secretInside) {
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        byte[] head = ("00960000000000000000000000000000000000000000 1111111111111111111111111111111111111111"
                + " refs/heads/main\0 report-status side-band-64k agent=git/2.39.5\n0000PACK")
                .getBytes(StandardCharsets.ISO_8859_1);
        System.arraycopy(head, 0, bytes, 0, head.length);
        if (secretInside != null) {
            byte[] s = ("blob\nANTHROPIC_API_KEY=" + secretInside + "\n").getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(s, 0, bytes, size - s.length - 300, s.length);
        }
        return bytes;
    }

    private SSLSocket tunnel() throws Exception {
        return tunnel(new Socket("127.0.0.1", sluice.port()));
    }

    private SSLSocket tunnel(Socket socket) throws Exception {
        socket.setSoTimeout(15_000);
        String target = HOST + ":" + origin.port();
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        assertThat(readHead(socket.getInputStream())).startsWith("HTTP/1.1 200");
        SSLSocket s = (SSLSocket) TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")).getSocketFactory()
                .createSocket(socket, HOST, origin.port(), true);
        s.startHandshake();
        return s;
    }

    private String head(String path, String... fields) {
        StringBuilder b = new StringBuilder("POST " + path + " HTTP/1.1\r\nHost: " + HOST + ":" + origin.port() + "\r\n");
        for (String f : fields) {
            b.append(f).append("\r\n");
        }
        return b.append("\r\n").toString();
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed after: " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    /** Reads one final response with a Content-Length body and returns "status body". */
    private static String readResponse(InputStream in) throws IOException {
        String head = readHead(in);
        int length = 0;
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        return head.split(" ")[1] + " " + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }

    /** Sends {@code head} and {@code body} with Content-Length and returns "status body". */
    private String post(String head, byte[] body) throws Exception {
        try (SSLSocket s = tunnel()) {
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            return readResponse(s.getInputStream());
        }
    }

    /** Sends {@code head} and {@code body} in chunks of {@code chunkBytes} and returns "status body". */
    private String postChunked(String head, byte[] body, int chunkBytes) throws Exception {
        try (SSLSocket s = tunnel()) {
            OutputStream out = s.getOutputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            for (int off = 0; off < body.length; off += chunkBytes) {
                int n = Math.min(chunkBytes, body.length - off);
                out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body, off, n);
                out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
            out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            return readResponse(s.getInputStream());
        }
    }

    private RecordingOrigin.Seen seen(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> origin.requests().stream()
                .filter(r -> r.uri().equals(path)).findFirst().orElse(null), r -> r != null);
    }

    private JsonNode audit(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals(path)).findFirst().orElse(null), r -> r != null);
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    private static byte[] gzip(byte[] plain) throws IOException {
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(gz)) {
            g.write(plain);
        }
        return gz.toByteArray();
    }

    @Test
    void aChunkedBodyReachesAnOriginThatRequiresALengthWithContentLength() throws Exception {
        start(true, "action: redact", "max_header_bytes: 32768");
        byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}".getBytes(StandardCharsets.UTF_8);
        String answer = postChunked(head("/chunked", "Content-Type: application/json", "Transfer-Encoding: chunked"),
                body, 10);
        assertThat(answer).startsWith("200 ");
        RecordingOrigin.Seen seen = seen("/chunked");
        assertThat(seen.status()).isEqualTo(200);
        assertThat(seen.header("transfer-encoding")).isNull();
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(body.length));
        assertThat(seen.body()).isEqualTo(body);
    }

    @Test
    void anUnchangedBodyArrivesByteIdenticalWithItsContentLengthAndEncoding() throws Exception {
        start(false, "action: redact", "max_header_bytes: 32768");
        byte[] json = "{\"messages\":[{\"role\":\"user\",\"content\":\"nothing secret here\"}]}"
                .getBytes(StandardCharsets.UTF_8);
        assertThat(post(head("/plain", "Content-Type: application/json", "Content-Length: " + json.length), json))
                .startsWith("200 ");
        RecordingOrigin.Seen plain = seen("/plain");
        assertThat(plain.header("content-length")).isEqualTo(String.valueOf(json.length));
        assertThat(plain.header("transfer-encoding")).isNull();
        assertThat(plain.bodySha256()).isEqualTo(sha256(json));

        byte[] gz = gzip(json);
        assertThat(post(head("/gzip", "Content-Type: application/json", "Content-Encoding: gzip",
                "Content-Length: " + gz.length), gz)).startsWith("200 ");
        RecordingOrigin.Seen gzipped = seen("/gzip");
        assertThat(gzipped.header("content-encoding")).isEqualTo("gzip");
        assertThat(gzipped.header("content-length")).isEqualTo(String.valueOf(gz.length));
        assertThat(gzipped.header("transfer-encoding")).isNull();
        assertThat(gzipped.bodySha256()).isEqualTo(sha256(gz));
    }

    @Test
    void aRedactedBodyIsSentIdentityEncodedWithTheRecomputedContentLength() throws Exception {
        start(false, "action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        byte[] json = ("{\"messages\":[{\"role\":\"user\",\"content\":\"export ANTHROPIC_API_KEY=" + key + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
        byte[] gz = gzip(json);
        assertThat(post(head("/redact", "Content-Type: application/json", "Content-Encoding: gzip",
                "Content-Length: " + gz.length), gz)).startsWith("200 ");
        RecordingOrigin.Seen seen = seen("/redact");
        String got = new String(seen.body(), StandardCharsets.UTF_8);
        assertThat(got).isEqualTo("{\"messages\":[{\"role\":\"user\",\"content\":\"export ANTHROPIC_API_KEY="
                + "[REDACTED:anthropic-api-key]\"}]}");
        assertThat(seen.header("content-encoding")).isNull();
        assertThat(seen.header("transfer-encoding")).isNull();
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(seen.body().length));
        assertThat(audit("/redact").path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);

        // No Content-Type: the body counts as text, so it is scanned and redacted too.
        byte[] untyped = ("token for the job: " + key + "\n").getBytes(StandardCharsets.UTF_8);
        assertThat(post(head("/untyped", "Content-Length: " + untyped.length), untyped)).startsWith("200 ");
        RecordingOrigin.Seen plain = seen("/untyped");
        assertThat(new String(plain.body(), StandardCharsets.UTF_8))
                .isEqualTo("token for the job: [REDACTED:anthropic-api-key]\n");
        assertThat(plain.header("content-length")).isEqualTo(String.valueOf(plain.body().length));
    }

    @Test
    void expectContinueIsAnsweredBySluiceForABufferedBodyAndByTheOriginForAStreamedOne() throws Exception {
        start(false, "action: redact", "max_buffered_body: 64KiB");
        byte[] small = "{\"content\":\"small\"}".getBytes(StandardCharsets.UTF_8);
        byte[] large = new byte[200_000];
        java.util.Arrays.fill(large, (byte) 'a');
        for (var c : List.of(new Object[] {"/expect-small", small}, new Object[] {"/expect-large", large})) {
            String path = (String) c[0];
            byte[] body = (byte[]) c[1];
            try (SSLSocket s = tunnel()) {
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                out.write(head(path, "Content-Type: text/plain", "Content-Length: " + body.length,
                        "Expect: 100-continue").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String interim = readHead(in);
                assertThat(interim).as(path).startsWith("HTTP/1.1 100");
                // Buffered, Sluice asks for the body itself; streamed, the origin's own 100 comes through.
                assertThat(interim.contains("X-Origin-Continue")).as(path).isEqualTo(body == large);
                out.write(body);
                out.flush();
                assertThat(readResponse(in)).as(path).startsWith("200 ");
            }
            RecordingOrigin.Seen seen = seen(path);
            assertThat(seen.bodySha256()).isEqualTo(sha256(body));
            if (body == small) {
                assertThat(seen.header("content-length")).isEqualTo(String.valueOf(body.length));
            }
        }
    }

    @Test
    void aBodyOverTheBoundStreamsChunkedAndIsStillRedacted() throws Exception {
        start(false, "action: redact", "max_buffered_body: 64KiB");
        String key = anthropicKey();
        StringBuilder text = new StringBuilder();
        while (text.length() < 300_000) {
            text.append("line ").append(text.length()).append(" of a long tool output\n");
        }
        text.append("ANTHROPIC_API_KEY=").append(key).append("\nend\n");
        byte[] body = text.toString().getBytes(StandardCharsets.UTF_8);
        assertThat(postChunked(head("/large", "Content-Type: text/plain", "Transfer-Encoding: chunked"), body, 16_384))
                .startsWith("200 ");
        RecordingOrigin.Seen seen = seen("/large");
        assertThat(seen.header("transfer-encoding")).isEqualTo("chunked");
        assertThat(seen.header("content-length")).isNull();
        String got = new String(seen.body(), StandardCharsets.UTF_8);
        assertThat(got).doesNotContain(key).endsWith("ANTHROPIC_API_KEY=[REDACTED:anthropic-api-key]\nend\n");
        assertThat(seen.bodyBytes()).isEqualTo(body.length - key.length() + "[REDACTED:anthropic-api-key]".length());
    }

    @Test
    void aGitPackWithAKeyInsideIsRefusedByDefaultAndNothingReachesTheOrigin() throws Exception {
        start(false, "action: redact", "max_header_bytes: 32768");
        byte[] pack = gitPackLike(50_000, anthropicKey());
        String answer = post(head("/repo.git/git-receive-pack", "Content-Type: application/x-git-receive-pack-request",
                "Content-Length: " + pack.length), pack);
        assertThat(answer).isEqualTo("403 sluice: credential_detected\n");
        JsonNode record = audit("/repo.git/git-receive-pack");
        assertThat(record.path("reason").asText()).isEqualTo("credential_detected");
        assertThat(record.path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
        assertThat(origin.requests()).isEmpty();

        // A binary body without a finding passes byte-identical.
        byte[] clean = gitPackLike(50_000, null);
        assertThat(post(head("/repo.git/clean", "Content-Type: application/x-git-receive-pack-request",
                "Content-Length: " + clean.length), clean)).startsWith("200 ");
        RecordingOrigin.Seen seen = seen("/repo.git/clean");
        assertThat(seen.bodySha256()).isEqualTo(sha256(clean));
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(clean.length));
    }

    @Test
    void aLargeGitPackWithAKeyIsAbortedBeforeTheHeldBackKeyLeaves() throws Exception {
        start(false, "action: redact", "max_buffered_body: 64KiB");
        byte[] pack = gitPackLike(400_000, anthropicKey());
        String answer = postChunked(head("/repo.git/large", "Content-Type: application/x-git-receive-pack-request",
                "Transfer-Encoding: chunked"), pack, 32_768);
        assertThat(answer).as("%s", sluice.audit()).isEqualTo("403 sluice: credential_detected\n");
        assertThat(audit("/repo.git/large").path("reason").asText()).isEqualTo("credential_detected");
        assertThat(origin.requests()).as("the origin never saw a complete request").isEmpty();
    }

    @Test
    void reportModePassesABinaryBodyWithAKeyUnchangedAndRecordsTheFinding() throws Exception {
        start(false, "action: redact\n  binary: report", "max_buffered_body: 64KiB");
        byte[] pack = gitPackLike(50_000, anthropicKey());
        assertThat(post(head("/repo.git/report", "Content-Type: application/x-git-receive-pack-request",
                "Content-Length: " + pack.length), pack)).startsWith("200 ");
        RecordingOrigin.Seen seen = seen("/repo.git/report");
        assertThat(seen.bodySha256()).isEqualTo(sha256(pack));
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(pack.length));
        assertThat(audit("/repo.git/report").path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);

        // Over the bound it streams, still unchanged and with its own Content-Length.
        byte[] large = gitPackLike(300_000, anthropicKey());
        assertThat(post(head("/repo.git/report-large", "Content-Type: application/octet-stream",
                "Content-Length: " + large.length), large)).startsWith("200 ");
        RecordingOrigin.Seen big = seen("/repo.git/report-large");
        assertThat(big.bodySha256()).isEqualTo(sha256(large));
        assertThat(big.header("content-length")).isEqualTo(String.valueOf(large.length));
        assertThat(big.header("transfer-encoding")).isNull();
        assertThat(audit("/repo.git/report-large").path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
    }

    @Test
    void aClientThatLeavesWhileItsBodyIsHeldStillGetsItsAuditRecordAndNothingIsSent() throws Exception {
        start(false, "action: redact", "max_header_bytes: 32768");
        Socket raw = new Socket("127.0.0.1", sluice.port());
        try (raw) {
            SSLSocket s = tunnel(raw);
            OutputStream out = s.getOutputStream();
            out.write(head("/left", "Content-Type: application/json", "Content-Length: 1000", "Expect: 100-continue")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            // Sluice's own 100: the head is read and the body is being held.
            assertThat(readHead(s.getInputStream())).startsWith("HTTP/1.1 100");
            out.write("{\"content\":\"half of it".getBytes(StandardCharsets.UTF_8));
            out.flush();
            // Gone at once (RST): a half-close is another matter (the connection stays open for the answer).
            raw.setSoLinger(true, 0);
        }
        JsonNode record = audit("/left");
        assertThat(record.path("error").asText()).startsWith("downstream closed before");
        assertThat(origin.requests()).isEmpty();
    }

    @Test
    void aChunkedBodyWithTrailerFieldsStaysChunked() throws Exception {
        start(false, "action: redact", "max_header_bytes: 32768");
        byte[] body = "{\"content\":\"with a trailer\"}".getBytes(StandardCharsets.UTF_8);
        try (SSLSocket s = tunnel()) {
            OutputStream out = s.getOutputStream();
            out.write(head("/trailer", "Content-Type: application/json", "Transfer-Encoding: chunked",
                    "Trailer: X-Checksum").getBytes(StandardCharsets.US_ASCII));
            out.write((Integer.toHexString(body.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.write("\r\n0\r\nX-Checksum: abc\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(readResponse(s.getInputStream())).startsWith("200 ");
        }
        RecordingOrigin.Seen seen = seen("/trailer");
        assertThat(seen.header("transfer-encoding")).isEqualTo("chunked");
        assertThat(seen.header("content-length")).isNull();
        assertThat(seen.body()).isEqualTo(body);
    }

    @Test
    void javaHttpClientStreamingABodyOfUnknownLengthReachesAnOriginThatRequiresALength() throws Exception {
        start(true, "action: redact", "max_header_bytes: 32768");
        byte[] body = "{\"model\":\"m\",\"input\":\"a streamed body of unknown length\"}".getBytes(StandardCharsets.UTF_8);
        java.net.http.HttpClient client = java.net.http.HttpClient.newBuilder()
                .proxy(java.net.ProxySelector.of(new java.net.InetSocketAddress("127.0.0.1", sluice.port())))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .version(java.net.http.HttpClient.Version.HTTP_1_1)
                .build();
        // ofInputStream has no known length: the client sends it chunked.
        java.net.http.HttpResponse<String> response = client.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("https://" + HOST + ":" + origin.port() + "/v1/responses"))
                .header("Content-Type", "application/json")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(body)))
                .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("ok " + body.length + " " + sha256(body));
        assertThat(seen("/v1/responses").header("content-length")).isEqualTo(String.valueOf(body.length));
    }

    @Test
    void curlUploadingWithExpectContinueReachesAnOriginThatRequiresALength() throws Exception {
        start(true, "action: redact", "max_header_bytes: 32768");
        StringBuilder json = new StringBuilder("{\"input\":\"");
        while (json.length() < 50_000) {
            json.append("some words of a long prompt ");
        }
        byte[] body = json.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
        Path file = dir.resolve("body.json");
        java.nio.file.Files.write(file, body);
        // Asked for explicitly (curl adds it by itself only for larger bodies); curl then waits for the 100.
        dev.sluice.proxy.testing.Curl.CurlResult curl = dev.sluice.proxy.testing.Curl.run(List.of("-v",
                "-x", "http://127.0.0.1:" + sluice.port(), "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(),
                "-H", "Content-Type: application/json", "-H", "Expect: 100-continue", "--data-binary", "@" + file,
                "https://" + HOST + ":" + origin.port() + "/v1/messages"));
        assertThat(curl.httpStatus()).as(curl.stderr()).isEqualTo(200);
        // curl offers h2 by ALPN and gets it: the 100 comes as an HTTP/2 interim HEADERS frame.
        assertThat(curl.stderr()).containsIgnoringCase("Expect: 100-continue").containsPattern("< HTTP/(1\\.1|2) 100");
        assertThat(curl.body()).isEqualTo("ok " + body.length + " " + sha256(body));
        RecordingOrigin.Seen seen = seen("/v1/messages");
        assertThat(seen.header("content-length")).isEqualTo(String.valueOf(body.length));
        assertThat(seen.header("expect")).isNull();
    }
}
