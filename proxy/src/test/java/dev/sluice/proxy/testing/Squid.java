package dev.sluice.proxy.testing;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real Squid (the Debian package {@code squid}: {@code /usr/sbin/squid} and the
 * {@code basic_ncsa_auth} helper) as a parent proxy on 127.0.0.1, one per test: a minimal squid.conf in
 * a temporary directory, Basic auth against an htpasswd file made with {@code openssl passwd -apr1}, no
 * cache, run in the foreground ({@code -N}) and stopped on {@link #close}. Every request it handled is
 * in {@link #accessLog} (Squid's native format: the method and the URL it was asked for, e.g.
 * {@code CONNECT 127.0.0.1:8443}).
 */
public final class Squid implements AutoCloseable {

    /** Squid's binary as the Debian package installs it. */
    public static final Path BINARY = Path.of("/usr/sbin/squid");
    private static final List<Path> HELPER_DIRS = List.of(Path.of("/usr/lib/squid"), Path.of("/usr/lib64/squid"),
            Path.of("/usr/libexec/squid"));

    /** Why Squid cannot run here, or null when it can (for {@code assumeTrue}). */
    public static String unavailable() {
        if (!Files.isExecutable(BINARY)) {
            return "squid is not installed (" + BINARY + "): apt-get install squid openssl";
        }
        if (helper() == null) {
            return "squid's basic_ncsa_auth helper is missing (looked in " + HELPER_DIRS + ")";
        }
        if (!Files.isExecutable(Path.of("/usr/bin/openssl"))) {
            return "openssl is not installed (needed for the htpasswd file): apt-get install openssl";
        }
        return null;
    }

    private static Path helper() {
        for (Path dir : HELPER_DIRS) {
            Path p = dir.resolve("basic_ncsa_auth");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    private final Path dir;
    private final Process process;
    private final int port;

    private Squid(Path dir, Process process, int port) {
        this.dir = dir;
        this.process = process;
        this.port = port;
    }

    /**
     * Starts Squid requiring Basic auth as {@code user}:{@code password}; it allows CONNECT to any port
     * except {@code refusedPorts} (answered 403 to authenticated clients).
     */
    public static Squid start(String user, String password, int... refusedPorts) throws Exception {
        // World-writable: Squid started as root drops to its cache_effective_user (proxy).
        Path dir = Files.createTempDirectory("sluice-squid-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Process openssl = new ProcessBuilder("/usr/bin/openssl", "passwd", "-apr1", "-stdin")
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        openssl.getOutputStream().write((password + "\n").getBytes(StandardCharsets.UTF_8));
        openssl.getOutputStream().close();
        String hash = new String(openssl.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!openssl.waitFor(10, TimeUnit.SECONDS) || openssl.exitValue() != 0 || hash.isEmpty()) {
            throw new IOException("openssl passwd failed");
        }
        Path htpasswd = dir.resolve("htpasswd");
        Files.writeString(htpasswd, user + ":" + hash + "\n");
        Files.setPosixFilePermissions(htpasswd, PosixFilePermissions.fromString("rw-r--r--"));
        int port = SluiceFixture.freePort();
        StringBuilder refused = new StringBuilder();
        for (int p : refusedPorts) {
            refused.append(' ').append(p);
        }
        String conf = """
                http_port 127.0.0.1:%1$d
                pid_filename %2$s/squid.pid
                cache_log %2$s/cache.log
                access_log stdio:%2$s/access.log squid
                cache deny all
                coredump_dir %2$s
                shutdown_lifetime 0 seconds
                dns_nameservers 127.0.0.1
                auth_param basic program %3$s %4$s
                auth_param basic realm sluice-test
                acl authed proxy_auth REQUIRED
                %5$s
                http_access allow authed
                http_access deny all
                """.formatted(port, dir, helper(), htpasswd,
                refused.length() == 0 ? "" : "acl refused port" + refused + "\nhttp_access deny authed refused");
        Path confFile = dir.resolve("squid.conf");
        Files.writeString(confFile, conf);
        Files.setPosixFilePermissions(confFile, PosixFilePermissions.fromString("rw-r--r--"));
        Process process = new ProcessBuilder(BINARY.toString(), "-N", "-f", confFile.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("stdout.txt").toFile()).start();
        Squid squid = new Squid(dir, process, port);
        try {
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() -> {
                if (!process.isAlive()) {
                    throw new IOException("squid exited: " + squid.output());
                }
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                    return true;
                } catch (IOException e) {
                    return false;
                }
            });
        } catch (RuntimeException e) {
            squid.close();
            throw e;
        }
        return squid;
    }

    /** The port Squid listens on (127.0.0.1). */
    public int port() {
        return port;
    }

    /** {@code http://127.0.0.1:<port>}. */
    public String url() {
        return "http://127.0.0.1:" + port;
    }

    /** The lines of Squid's access log so far (written when each transaction ends). */
    public List<String> accessLog() throws IOException {
        Path log = dir.resolve("access.log");
        return Files.exists(log) ? Files.readAllLines(log) : List.of();
    }

    /** Squid's own output and cache.log, for failure messages. */
    public String output() {
        List<String> out = new ArrayList<>();
        for (String name : List.of("stdout.txt", "cache.log")) {
            try {
                out.addAll(Files.readAllLines(dir.resolve(name)));
            } catch (IOException e) {
                // absent
            }
        }
        return String.join("\n", out);
    }

    @Override
    public void close() throws IOException {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
