package dev.sluice.proxy.testing;

import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;

import com.github.tomakehurst.wiremock.WireMockServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * A WireMock origin server for integration tests: plain HTTP and HTTPS on ephemeral ports, bound to
 * 127.0.0.1, the HTTPS port serving a {@link TestTls} leaf for {@code origin.test}, {@code localhost},
 * {@code 127.0.0.1} and {@code ::1}. Stub it through {@link #server()}; close it when done.
 *
 * <pre>{@code
 * try (Origins origins = Origins.start()) {
 *     origins.server().stubFor(get("/hello").willReturn(ok("hi")));
 *     HttpClient client = HttpClient.newBuilder().sslContext(origins.tls().clientContext()).build();
 *     ... origins.httpsUrl("/hello") ...
 * }
 * }</pre>
 */
public final class Origins implements AutoCloseable {

    /** The address both ports are bound to. */
    public static final String BIND_ADDRESS = "127.0.0.1";

    private final WireMockServer server;
    private final TestTls tls;
    private final Path ownedDir;

    private Origins(WireMockServer server, TestTls tls, Path ownedDir) {
        this.server = server;
        this.tls = tls;
        this.ownedDir = ownedDir;
    }

    /**
     * Starts an origin whose certificates live in a fresh temporary directory, deleted on
     * {@link #close()}.
     *
     * @throws IOException if the certificates cannot be written
     */
    public static Origins start() throws IOException {
        Path dir = Files.createTempDirectory("sluice-origin-");
        try {
            return start(TestTls.create(dir), dir);
        } catch (RuntimeException e) {
            deleteTree(dir);
            throw e;
        }
    }

    /**
     * Starts an origin serving the keystore of {@code tls}; the caller owns the certificate files.
     */
    public static Origins start(TestTls tls) {
        return start(tls, null);
    }

    private static Origins start(TestTls tls, Path ownedDir) {
        Objects.requireNonNull(tls, "tls");
        WireMockServer server = new WireMockServer(options()
                .bindAddress(BIND_ADDRESS)
                .port(0)
                .httpsPort(0)
                .keystorePath(tls.keystore().toString())
                .keystoreType("PKCS12")
                .keystorePassword(tls.keystorePassword())
                .keyManagerPassword(tls.keystorePassword()));
        server.start();
        return new Origins(server, tls, ownedDir);
    }

    /** Returns the WireMock server, for stubbing and verifying requests. */
    public WireMockServer server() {
        return server;
    }

    /** Returns the certificates the HTTPS port serves. */
    public TestTls tls() {
        return tls;
    }

    /** Returns the CA certificate (PEM) that signed the HTTPS port's certificate. */
    public Path caPem() {
        return tls.caPem();
    }

    /** Returns the plain HTTP port on 127.0.0.1. */
    public int httpPort() {
        return server.port();
    }

    /** Returns the HTTPS port on 127.0.0.1. */
    public int httpsPort() {
        return server.httpsPort();
    }

    /** Returns {@code http://127.0.0.1:<httpPort><path>}. */
    public String httpUrl(String path) {
        return "http://" + BIND_ADDRESS + ":" + httpPort() + path;
    }

    /** Returns {@code https://localhost:<httpsPort><path>} (a name the certificate covers). */
    public String httpsUrl(String path) {
        return "https://localhost:" + httpsPort() + path;
    }

    /** Stops the server and deletes the certificate directory if this object created it. */
    @Override
    public void close() {
        try {
            server.stop();
        } finally {
            if (ownedDir != null) {
                deleteTree(ownedDir);
            }
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + dir, e);
        }
    }
}
