package dev.sluice.proxy.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * A real git smart-HTTP origin on 127.0.0.1: an HTTPS server (the JDK's) that runs
 * {@code git http-backend} as a CGI program (RFC 3875) for every request, over the bare repositories
 * under one directory ({@code GIT_PROJECT_ROOT}, all exported, pushes allowed). It records each
 * request's method, path and framing, and with {@code lengthRequired} answers {@code 411 Length Required}
 * to a chunked request body, as some origins do.
 */
public final class GitHttpOrigin implements AutoCloseable {

    /** One request as the origin saw it. */
    public record Seen(String method, String path, String contentLength, String transferEncoding,
                       String contentEncoding, int status) {
    }

    private final HttpsServer server;
    private final ExecutorService executor = Executors.newFixedThreadPool(2);
    private final ConcurrentLinkedQueue<Seen> seen = new ConcurrentLinkedQueue<>();

    /**
     * @param projectRoot directory holding the bare repositories
     * @param tls the leaf the origin presents
     * @param lengthRequired answer 411 to a chunked request body
     */
    public GitHttpOrigin(Path projectRoot, TestTls tls, boolean lengthRequired) throws Exception {
        this(projectRoot, tls, lengthRequired, null);
    }

    /**
     * As {@link #GitHttpOrigin(Path, TestTls, boolean)}, answering {@code 401} with a Basic challenge
     * (RFC 7617) to every request whose {@code Authorization} is not {@code requiredAuthorization}.
     */
    public GitHttpOrigin(Path projectRoot, TestTls tls, boolean lengthRequired, String requiredAuthorization)
            throws Exception {
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(tls.keystore())) {
            keys.load(in, tls.keystorePassword().toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, tls.keystorePassword().toCharArray());
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), null, null);
        server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        server.setHttpsConfigurator(new HttpsConfigurator(context));
        server.setExecutor(executor);
        server.createContext("/", exchange -> {
            try {
                if (requiredAuthorization != null
                        && !requiredAuthorization.equals(exchange.getRequestHeaders().getFirst("Authorization"))) {
                    exchange.getRequestBody().readAllBytes();
                    seen.add(new Seen(exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), null, null,
                            null, 401));
                    exchange.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"git\"");
                    exchange.sendResponseHeaders(401, -1);
                    return;
                }
                serve(exchange, projectRoot, lengthRequired);
            } catch (IOException | RuntimeException e) {
                exchange.sendResponseHeaders(500, -1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(500, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public List<Seen> requests() {
        return List.copyOf(seen);
    }

    private void serve(HttpExchange exchange, Path projectRoot, boolean lengthRequired)
            throws IOException, InterruptedException {
        String method = exchange.getRequestMethod();
        String path = exchange.getRequestURI().getRawPath();
        String length = exchange.getRequestHeaders().getFirst("Content-Length");
        String transfer = exchange.getRequestHeaders().getFirst("Transfer-Encoding");
        String coding = exchange.getRequestHeaders().getFirst("Content-Encoding");
        byte[] body = exchange.getRequestBody().readAllBytes();
        if (lengthRequired && transfer != null && transfer.toLowerCase().contains("chunked")) {
            seen.add(new Seen(method, path, length, transfer, coding, 411));
            exchange.sendResponseHeaders(411, -1);
            return;
        }
        ProcessBuilder pb = new ProcessBuilder("git", "http-backend");
        Map<String, String> env = pb.environment();
        env.put("GIT_PROJECT_ROOT", projectRoot.toString());
        env.put("GIT_HTTP_EXPORT_ALL", "1");
        env.put("GIT_CONFIG_NOSYSTEM", "1");
        env.put("REQUEST_METHOD", method);
        env.put("PATH_INFO", path);
        env.put("QUERY_STRING", exchange.getRequestURI().getRawQuery() == null ? "" : exchange.getRequestURI().getRawQuery());
        env.put("CONTENT_LENGTH", String.valueOf(body.length));
        env.put("REMOTE_ADDR", "127.0.0.1");
        env.put("REMOTE_USER", "tester");
        String type = exchange.getRequestHeaders().getFirst("Content-Type");
        if (type != null) {
            env.put("CONTENT_TYPE", type);
        }
        if (coding != null) {
            env.put("HTTP_CONTENT_ENCODING", coding);
        }
        String protocol = exchange.getRequestHeaders().getFirst("Git-Protocol");
        if (protocol != null) {
            env.put("GIT_PROTOCOL", protocol);
        }
        pb.redirectError(ProcessBuilder.Redirect.DISCARD);
        Process process = pb.start();
        try (OutputStream stdin = process.getOutputStream()) {
            stdin.write(body);
        }
        byte[] output = process.getInputStream().readAllBytes();
        process.waitFor(30, TimeUnit.SECONDS);
        int split = indexOf(output, "\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        int skip = 4;
        if (split < 0) {
            split = indexOf(output, "\n\n".getBytes(StandardCharsets.US_ASCII));
            skip = 2;
        }
        if (split < 0) {
            seen.add(new Seen(method, path, length, transfer, coding, 502));
            exchange.sendResponseHeaders(502, -1);
            return;
        }
        int status = 200;
        for (String line : new String(output, 0, split, StandardCharsets.ISO_8859_1).split("\r?\n")) {
            int colon = line.indexOf(':');
            if (colon <= 0) {
                continue;
            }
            String name = line.substring(0, colon).trim();
            String value = line.substring(colon + 1).trim();
            if (name.equalsIgnoreCase("Status")) {
                status = Integer.parseInt(value.split(" ")[0]);
            } else {
                exchange.getResponseHeaders().add(name, value);
            }
        }
        ByteArrayOutputStream rest = new ByteArrayOutputStream();
        rest.write(output, split + skip, output.length - split - skip);
        seen.add(new Seen(method, path, length, transfer, coding, status));
        exchange.sendResponseHeaders(status, rest.size() == 0 ? -1 : rest.size());
        if (rest.size() > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                rest.writeTo(out);
            }
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
