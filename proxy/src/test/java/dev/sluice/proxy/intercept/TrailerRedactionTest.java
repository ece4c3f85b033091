package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Found by trying to break Sluice (2026-12-04), on an intercepted host with {@code redact: true}: a
 * credential in a request's trailer field is redacted as one in a header field is; a body with two
 * {@code Content-Encoding: gzip} field lines is a list of two codings, refused 415 like {@code gzip, gzip}.
 */
class TrailerRedactionTest {

    private static final String HOST = "api.llm.test";
    /** A made-up GitHub token shape (ghp_ and 36 characters), never a real one. */
    private static final String TOKEN = "ghp_Zq8Rk2Lm9Xv4Tw7Yp3Nc6Bd1Hf5Js0Ga2Ke8";

    @TempDir
    Path dir;

    @Test
    void aCredentialInATrailerFieldIsRedactedLikeOneInAHeaderField() throws Exception {
        String request = exchange(target -> ("POST /v1/trailer HTTP/1.1\r\nHost: " + target
                + "\r\nContent-Type: text/plain\r\nX-Header-Copy: " + TOKEN
                + "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Note\r\n\r\n"
                + "5\r\nhello\r\n0\r\nX-Note: " + TOKEN + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        assertThat(request).startsWith("POST /v1/trailer ");
        // The header copy is redacted today; the trailer copy must be too (or the request refused).
        assertThat(request).contains("[REDACTED:github-pat]").doesNotContain(TOKEN);
    }

    /**
     * docs/policy.md: "any other coding, or more than one, is refused, 415 unsupported_encoding". Two
     * {@code Content-Encoding: gzip} field lines are the list {@code gzip, gzip} (RFC 9110 section 5.3);
     * today the body goes on unchanged, so an origin that undoes both codings reads the token.
     */
    @Test
    void twoContentEncodingFieldLinesAreRefusedAsMoreThanOneCoding() throws Exception {
        byte[] body = gzip(gzip(("k=" + TOKEN).getBytes(StandardCharsets.US_ASCII)));
        String request = exchange(target -> {
            ByteArrayOutputStream r = new ByteArrayOutputStream();
            r.writeBytes(("POST /v1/two-codings HTTP/1.1\r\nHost: " + target + "\r\nContent-Type: text/plain\r\n"
                    + "Content-Encoding: gzip\r\nContent-Encoding: gzip\r\nContent-Length: " + body.length
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            r.writeBytes(body);
            return r.toByteArray();
        });
        assertThat(request).as("the origin must not get the doubly encoded body")
                .doesNotStartWith("POST /v1/two-codings ");
    }

    private static byte[] gzip(byte[] in) throws java.io.IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(out)) {
            z.write(in);
        }
        return out.toByteArray();
    }

    /** What the origin read for one request sent through an intercepted tunnel ("none" if nothing came). */
    private String exchange(java.util.function.Function<String, byte[]> requestFor) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(tls.keystore())) {
            ks.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, tls.keystorePassword().toCharArray());
        SSLContext server = SSLContext.getInstance("TLS");
        server.init(kmf.getKeyManagers(), null, null);
        AtomicReference<String> seen = new AtomicReference<>();
        try (SSLServerSocket listener = (SSLServerSocket) server.getServerSocketFactory()
                .createServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            Thread origin = new Thread(() -> {
                // One request: read up to the end of the trailer section, then answer 200.
                try (Socket c = listener.accept()) {
                    c.setSoTimeout(15_000);
                    InputStream in = c.getInputStream();
                    ByteArrayOutputStream got = new ByteArrayOutputStream();
                    while (true) {
                        int b = in.read();
                        if (b < 0) {
                            break;
                        }
                        got.write(b);
                        String s = got.toString(StandardCharsets.ISO_8859_1);
                        int headEnd = s.indexOf("\r\n\r\n");
                        java.util.regex.Matcher cl = java.util.regex.Pattern
                                .compile("(?im)^content-length: *(\\d+)").matcher(s);
                        if (headEnd >= 0 && cl.find() && cl.start() < headEnd) {
                            if (got.size() >= headEnd + 4 + Integer.parseInt(cl.group(1))) {
                                break;
                            }
                            continue;
                        }
                        int end = s.indexOf("\r\n0\r\n");
                        if (end >= 0 && s.indexOf("\r\n\r\n", end + 2) >= 0) {
                            break;
                        }
                    }
                    seen.set(got.toString(StandardCharsets.ISO_8859_1));
                    c.getOutputStream().write("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                            .getBytes(StandardCharsets.US_ASCII));
                    c.getOutputStream().flush();
                } catch (Exception e) {
                    seen.compareAndSet(null, "origin failed: " + e);
                }
            });
            origin.setDaemon(true);
            origin.start();
            int port = listener.getLocalPort();
            try (SluiceFixture sluice = SluiceFixture.start("""
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
                      action: redact
                    listen:
                      proxy: 127.0.0.1:0
                    """.formatted(HOST, port, tls.caPem().toAbsolutePath()));
                 Socket socket = new Socket("127.0.0.1", sluice.port())) {
                socket.setSoTimeout(15_000);
                String target = HOST + ":" + port;
                socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                InputStream raw = socket.getInputStream();
                StringBuilder head = new StringBuilder();
                while (!head.toString().endsWith("\r\n\r\n")) {
                    head.append((char) raw.read());
                }
                assertThat(head.toString()).startsWith("HTTP/1.1 200");
                try (SSLSocket s = (SSLSocket) TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")).getSocketFactory()
                        .createSocket(socket, HOST, port, true)) {
                    s.startHandshake();
                    OutputStream out = s.getOutputStream();
                    out.write(requestFor.apply(target));
                    out.flush();
                    // Either the origin read a request, or Sluice answered the client without one.
                    InputStream back = s.getInputStream();
                    int first = back.read();
                    await().atMost(Duration.ofSeconds(10)).until(() -> seen.get() != null || first >= 0);
                    if (seen.get() == null) {
                        sluice.audit(); // the refusal's record; nothing reached the origin
                        return "none";
                    }
                }
            }
        }
        return seen.get();
    }
}
