package dev.sluice.proxy.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.server.PolicyReloader;
import dev.sluice.proxy.server.SluiceServer;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A real Sluice for a test: writes the given policy YAML to a temp data dir, loads it with the real
 * loader, opens the real audit log and starts the real server on loopback. {@link #close()} stops it,
 * flushes the audit log and deletes the temp dir.
 */
public final class SluiceFixture implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path dataDir;
    private final AuditLog auditLog;
    private final SluiceServer server;
    private boolean closed;

    private SluiceFixture(Path dataDir, AuditLog auditLog, SluiceServer server) {
        this.dataDir = dataDir;
        this.auditLog = auditLog;
        this.server = server;
    }

    /** Returns the reloader of the fixture's policy file (not watching until {@code startWatching()}). */
    public PolicyReloader reloader() {
        return server.reloader();
    }

    /** Replaces the policy file atomically (temp file + rename, as editors and config tools do). */
    public void writePolicy(String yaml) throws IOException {
        Path tmp = dataDir.resolve("policy.yaml.tmp");
        Files.writeString(tmp, yaml, StandardCharsets.UTF_8);
        Files.move(tmp, dataDir.resolve("policy.yaml"), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Starts Sluice on {@code policyYaml} (it should bind {@code listen.proxy: 127.0.0.1:0} or a free
     * port). A {@code listen} section without {@code admin} gets {@code admin: 127.0.0.1:0}, and a
     * policy without one gets ephemeral proxy and admin ports ({@link #ephemeralListeners}), so that
     * tests never depend on a fixed port being free.
     */
    public static SluiceFixture start(String policyYaml) throws Exception {
        return start(policyYaml, java.util.Map.of());
    }

    /** Starts Sluice like {@link #start(String)}, with OpenTelemetry settings ({@code otel.*}) for the audit export. */
    public static SluiceFixture start(String policyYaml, java.util.Map<String, String> otelConfig) throws Exception {
        return start(policyYaml, otelConfig, dev.sluice.proxy.core.ProxyContext.DEFAULT_REFUSAL_LINGER);
    }

    /**
     * Starts Sluice like {@link #start(String)} with its own refusal linger (how long a refused request's
     * body is read and dropped before the connection closes), for this server only.
     */
    public static SluiceFixture start(String policyYaml, java.time.Duration refusalLinger) throws Exception {
        return start(policyYaml, java.util.Map.of(), refusalLinger);
    }

    private static SluiceFixture start(String policyYaml, java.util.Map<String, String> otelConfig,
                                       java.time.Duration refusalLinger) throws Exception {
        policyYaml = ephemeralListeners(policyYaml);
        Path dir = Files.createTempDirectory("sluice-test-");
        Path file = dir.resolve("policy.yaml");
        Files.writeString(file, policyYaml, StandardCharsets.UTF_8);
        Policy policy = PolicyLoader.load(file);
        AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"));
        SluiceServer server = SluiceServer.start(policy, file, dir, log, Clock.systemUTC(), 2, otelConfig,
                refusalLinger);
        return new SluiceFixture(dir, log, server);
    }

    /**
     * Starts a new Sluice on an existing data dir (its {@code policy.yaml}, CA and pins), as a restart
     * of the process would.
     */
    public static SluiceFixture restart(Path dir) throws Exception {
        Path file = dir.resolve("policy.yaml");
        String yaml = Files.readString(file, StandardCharsets.UTF_8);
        String ephemeral = ephemeralListeners(yaml);
        if (!ephemeral.equals(yaml)) {
            Files.writeString(file, ephemeral, StandardCharsets.UTF_8);
        }
        Policy policy = PolicyLoader.load(file);
        AuditLog log = AuditLog.open(dir.resolve("audit.jsonl"));
        SluiceServer server = SluiceServer.start(policy, file, dir, log, Clock.systemUTC(), 2);
        return new SluiceFixture(dir, log, server);
    }

    /**
     * Returns {@code policyYaml} with ephemeral listeners where it names none: a block-style
     * {@code listen:} section without {@code admin} gets {@code admin: 127.0.0.1:0}; a policy without
     * {@code listen} gets {@code proxy} and {@code admin} on {@code 127.0.0.1:0}. Anything else is
     * returned unchanged.
     */
    static String ephemeralListeners(String policyYaml) {
        if (policyYaml.contains("admin:")) {
            return policyYaml;
        }
        if (policyYaml.contains("\nlisten:\n")) {
            return policyYaml.replace("\nlisten:\n", "\nlisten:\n  admin: 127.0.0.1:0\n");
        }
        if (!policyYaml.contains("listen:")) {
            return policyYaml + (policyYaml.endsWith("\n") ? "" : "\n") + "listen:\n  proxy: 127.0.0.1:0\n  admin: 127.0.0.1:0\n";
        }
        return policyYaml;
    }

    /** Returns a port nobody listens on right now (for policies that must name Sluice's own port). */
    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public SluiceServer server() {
        return server;
    }

    public int port() {
        return server.proxyAddress().getPort();
    }

    public InetSocketAddress address() {
        return server.proxyAddress();
    }

    /** {@code http://127.0.0.1:<port>}, for curl's {@code -x}. */
    public String proxyUrl() {
        return "http://127.0.0.1:" + port();
    }

    public Path dataDir() {
        return dataDir;
    }

    public AuditLog auditLog() {
        return auditLog;
    }

    /** Returns every audit record written so far, parsed; each line must be one JSON object. */
    public List<JsonNode> audit() {
        Path file = auditLog.path();
        try {
            if (!Files.exists(file)) {
                return List.of();
            }
            List<JsonNode> records = new ArrayList<>();
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                if (!line.isEmpty()) {
                    records.add(JSON.readTree(line));
                }
            }
            return records;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Stops the server gracefully within {@code grace}, then flushes and closes the audit log. */
    public void stop(java.time.Duration grace) {
        if (!closed) {
            closed = true;
            server.close(grace);
            auditLog.close();
        }
    }

    /** Stops the server (every connection writes its record), then flushes and closes the audit log. */
    public void stop() {
        if (!closed) {
            closed = true;
            server.close();
            auditLog.close();
        }
    }

    @Override
    public void close() throws IOException {
        stop();
        try (Stream<Path> walk = Files.walk(dataDir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
