package dev.sluice.proxy.credential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.sluice.rules.policy.Credential;
import dev.sluice.rules.policy.Policy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The values of one policy snapshot's credentials, in memory only. {@code env} and {@code file} sources
 * are read once, at load; a {@code command} source is run at load and again before its {@code ttl} runs
 * out (at 80% of it), without a shell, for at most {@link #COMMAND_TIMEOUT} and {@link #MAX_OUTPUT_BYTES}
 * of output. A refresh that fails keeps the previous value until it expires, and is retried meanwhile;
 * after that the credential is unavailable ({@link #value} returns null). Nothing here logs a value.
 */
public final class CredentialVault implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CredentialVault.class);

    /** Longest a command source may run. */
    public static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);
    /** Most output a command source may print, in bytes. */
    public static final int MAX_OUTPUT_BYTES = 1 << 20;

    private final Map<String, Secret> secrets = new ConcurrentHashMap<>();
    private final Map<String, ScheduledFuture<?>> refreshes = new ConcurrentHashMap<>();
    private final Clock clock;
    private final ScheduledExecutorService scheduler;
    private final Function<String, String> environment;
    private volatile boolean closed;

    private CredentialVault(Clock clock, ScheduledExecutorService scheduler, Function<String, String> environment) {
        this.clock = clock;
        this.scheduler = scheduler;
        this.environment = environment;
    }

    /**
     * Reads every credential of {@code policy}.
     *
     * @param scheduler runs command refreshes (null: commands are not refreshed, for {@code sluice check})
     * @param environment reads an environment variable (normally {@link System#getenv(String)})
     * @throws CredentialLoadException when a source that is not {@code optional} cannot be read
     */
    public static CredentialVault load(Policy policy, Clock clock, ScheduledExecutorService scheduler,
                                       Function<String, String> environment) throws CredentialLoadException {
        CredentialVault vault = new CredentialVault(clock, scheduler, environment);
        for (Credential c : policy.credentials().values()) {
            try {
                vault.secrets.put(c.name(), vault.read(c));
                vault.scheduleRefresh(c);
            } catch (CredentialLoadException e) {
                if (!c.optional()) {
                    vault.close();
                    throw e;
                }
                log.warn("credential {} is unavailable (optional): {}", c.name(), e.getMessage());
                vault.scheduleRetry(c, null);
            }
        }
        return vault;
    }

    /** Returns a vault with no value: every credential is unavailable. */
    public static CredentialVault empty(Clock clock) {
        return new CredentialVault(clock, null, name -> null);
    }

    /** Returns the current value of credential {@code name}, or null when it is unavailable or expired. */
    public String value(String name) {
        Secret s = secrets.get(name);
        if (s == null || !clock.instant().isBefore(s.expires())) {
            return null;
        }
        return s.value();
    }

    /** Returns every current value by name (for scrubbing responses); never logged. */
    Map<String, String> values() {
        Map<String, String> out = new LinkedHashMap<>();
        for (String name : secrets.keySet()) {
            String v = value(name);
            if (v != null) {
                out.put(name, v);
            }
        }
        return out;
    }

    private Secret read(Credential c) throws CredentialLoadException {
        Credential.Source source = c.source();
        String value;
        Instant expires = Instant.MAX;
        if (source instanceof Credential.Env env) {
            value = environment.apply(env.variable());
            if (value == null) {
                throw new CredentialLoadException(c.name(), "environment variable " + env.variable() + " is not set");
            }
            value = value.trim();
        } else if (source instanceof Credential.FileSource file) {
            String text;
            try {
                text = Files.readString(file.path(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new CredentialLoadException(c.name(), "cannot read " + file.path() + ": " + e.getClass().getSimpleName());
            }
            if (file.key() == null) {
                value = text.trim();
            } else {
                JsonNode tree;
                try {
                    tree = new YAMLMapper().readTree(text);
                } catch (IOException e) {
                    throw new CredentialLoadException(c.name(), file.path() + " is not JSON or YAML");
                }
                JsonNode v = tree == null ? null : tree.get(file.key());
                if (v == null || !v.isValueNode()) {
                    throw new CredentialLoadException(c.name(), file.path() + " has no string at key " + file.key());
                }
                value = v.asText().trim();
            }
        } else {
            Credential.Command command = (Credential.Command) source;
            value = run(c.name(), command);
            expires = clock.instant().plus(command.ttl());
        }
        if (c.inject().sigv4() && !value.isEmpty()) {
            // a key pair, JSON or YAML over several lines: kept as one line of JSON
            String pair = SigV4Signer.canonical(value);
            if (pair == null) {
                throw new CredentialLoadException(c.name(), "the value is not an AWS key pair (expected: JSON or YAML"
                        + " with access_key_id, secret_access_key and optionally session_token)");
            }
            value = pair;
        }
        if (value.isEmpty()) {
            throw new CredentialLoadException(c.name(), "the value is empty");
        }
        if (value.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
            throw new CredentialLoadException(c.name(), "the value has a control character (line break?)");
        }
        return new Secret(value, expires);
    }

    /** Runs a command source: no shell, stdin closed, stderr discarded, bounded in time and size. */
    static String run(String name, Credential.Command command) throws CredentialLoadException {
        Process p;
        try {
            p = new ProcessBuilder(command.argv()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            throw new CredentialLoadException(name, "cannot run " + command.argv().get(0) + ": " + e.getMessage());
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread reader = new Thread(() -> {
            try (InputStream in = p.getInputStream()) {
                byte[] buf = new byte[8192];
                for (int n; (n = in.read(buf)) >= 0; ) {
                    synchronized (out) {
                        if (out.size() + n > MAX_OUTPUT_BYTES) {
                            out.write(buf, 0, Math.max(0, MAX_OUTPUT_BYTES + 1 - out.size()));
                            p.destroyForcibly();
                            return;
                        }
                        out.write(buf, 0, n);
                    }
                }
            } catch (IOException e) {
                // the process went away; its exit status says what happened
            }
        }, "sluice-credential-" + name);
        reader.setDaemon(true);
        reader.start();
        try {
            if (!p.waitFor(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new CredentialLoadException(name, command.argv().get(0) + " did not finish within "
                        + COMMAND_TIMEOUT.toSeconds() + " s");
            }
            reader.join(COMMAND_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new CredentialLoadException(name, "interrupted");
        }
        synchronized (out) {
            if (out.size() > MAX_OUTPUT_BYTES) {
                throw new CredentialLoadException(name, command.argv().get(0) + " printed more than 1 MiB");
            }
            if (p.exitValue() != 0) {
                throw new CredentialLoadException(name, command.argv().get(0) + " exited with status " + p.exitValue());
            }
            return out.toString(StandardCharsets.UTF_8).trim();
        }
    }

    private void scheduleRefresh(Credential c) {
        if (scheduler == null || closed || !(c.source() instanceof Credential.Command command)) {
            return;
        }
        long delay = Math.max(1, command.ttl().toMillis() * 8 / 10);
        refreshes.put(c.name(), scheduler.schedule(() -> refresh(c), delay, TimeUnit.MILLISECONDS));
    }

    private void scheduleRetry(Credential c, Secret current) {
        if (scheduler == null || closed || !(c.source() instanceof Credential.Command command)) {
            return;
        }
        long delay = Math.max(1, Math.min(command.ttl().toMillis() / 10, 30_000));
        refreshes.put(c.name(), scheduler.schedule(() -> refresh(c), delay, TimeUnit.MILLISECONDS));
    }

    private void refresh(Credential c) {
        if (closed) {
            return;
        }
        try {
            secrets.put(c.name(), read(c));
            scheduleRefresh(c);
        } catch (CredentialLoadException e) {
            Secret old = secrets.get(c.name());
            log.warn("credential {}: refresh failed ({}); {}", c.name(), e.getMessage(), old == null
                    ? "still unavailable" : "the previous value is used until " + old.expires());
            scheduleRetry(c, old);
        } catch (RuntimeException e) {
            log.warn("credential {}: refresh failed: {}", c.name(), e.getClass().getSimpleName());
            scheduleRetry(c, secrets.get(c.name()));
        }
    }

    /** Stops refreshing and forgets every value. */
    @Override
    public void close() {
        closed = true;
        refreshes.values().forEach(f -> f.cancel(false));
        secrets.clear();
    }

    @Override
    public String toString() {
        return "CredentialVault[" + secrets.size() + " credentials, values masked]";
    }
}
