package dev.sluice.rules.policy;

import dev.sluice.rules.internal.PathGlob;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One entry of the policy's top-level {@code credentials} map (docs/credentials.md): where the real
 * secret comes from and where Sluice may put it in place of the extension's placeholder. The record
 * holds no secret: values are read by the proxy ({@code dev.sluice.proxy.credential}).
 *
 * @param name the credential's name ({@link Extension#NAME_PATTERN}), a label in audit and metrics
 * @param source where the value is read
 * @param optional {@code optional: true}: a source that cannot be read does not fail the load; requests
 *                 carrying the placeholder get 503 {@code credential_unavailable} instead
 * @param placeholderEnv the variable {@code sluice env} prints the placeholder under
 * @param inject where the placeholder may be swapped for the value
 */
public record Credential(String name, Source source, boolean optional, String placeholderEnv, Inject inject) {

    public Credential {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(placeholderEnv, "placeholderEnv");
        Objects.requireNonNull(inject, "inject");
    }

    /** Where a credential's value comes from. */
    public sealed interface Source permits Env, FileSource, Command {
    }

    /** {@code source: {env: VAR}}: the variable of Sluice's own environment, read at load. */
    public record Env(String variable) implements Source {
    }

    /**
     * {@code source: {file: PATH}}: the whole file, trimmed, read at load; with {@code key}, the string
     * at that top-level key of a JSON or YAML file.
     *
     * @param path absolute, resolved against the policy file's directory
     * @param key the top-level key, or null for the whole file
     */
    public record FileSource(Path path, @Nullable String key) implements Source {
    }

    /**
     * {@code source: {command: [argv...], ttl: 15m}}: the trimmed standard output of the command, run
     * without a shell (10 s timeout, 1 MiB cap), kept for {@code ttl}.
     */
    public record Command(List<String> argv, Duration ttl) implements Source {
        public Command {
            argv = List.copyOf(argv);
            Objects.requireNonNull(ttl, "ttl");
        }

        @Override
        public String toString() {
            // the arguments may carry a secret of their own (a vault token): name the program only
            return "Command[" + (argv.isEmpty() ? "" : argv.get(0)) + " ..., ttl=" + ttl + "]";
        }
    }

    /**
     * Where the placeholder may be replaced.
     *
     * @param hosts canonical host names or {@code *.suffix}, each under {@code inspect}
     * @param ports the ports, empty for 443 only
     * @param paths path globs (as in rules), empty for any path
     * @param headers header names (lower case) whose values may carry the placeholder anywhere in them
     * @param basic whether the placeholder may be the user or password of a Basic {@code Authorization}
     * @param query query parameter names whose values may be the placeholder
     * @param body whether JSON strings and form fields of the body may carry it
     * @param sigv4 whether the placeholder may be the access key id of an AWS SigV4 {@code Authorization}
     *              ({@code AWS4-HMAC-SHA256 Credential=<placeholder>/...}); the value is then a key pair
     *              and Sluice signs the request again with it
     * @param sigv4UnsignedPayload whether such a request may carry {@code x-amz-content-sha256:
     *                             UNSIGNED-PAYLOAD} (signed again unsigned); refused otherwise
     */
    public record Inject(List<String> hosts, Set<Integer> ports, List<String> paths, List<String> headers,
                         boolean basic, List<String> query, boolean body, boolean sigv4,
                         boolean sigv4UnsignedPayload) {
        public Inject {
            hosts = List.copyOf(hosts);
            ports = Set.copyOf(ports);
            paths = List.copyOf(paths);
            headers = List.copyOf(headers);
            query = List.copyOf(query);
        }

        /** An {@code inject} without SigV4. */
        public Inject(List<String> hosts, Set<Integer> ports, List<String> paths, List<String> headers,
                      boolean basic, List<String> query, boolean body) {
            this(hosts, ports, paths, headers, basic, query, body, false, false);
        }

        /** Returns whether a request to {@code host} (canonical), {@code port} and {@code path} is in bounds. */
        public boolean covers(String host, int port, String path) {
            if (!(ports.isEmpty() ? port == 443 : ports.contains(port))) {
                return false;
            }
            boolean hostOk = false;
            for (String h : hosts) {
                if (h.startsWith("*.") ? host.endsWith(h.substring(1)) : h.equals(host)) {
                    hostOk = true;
                    break;
                }
            }
            if (!hostOk) {
                return false;
            }
            if (paths.isEmpty()) {
                return true;
            }
            int q = path.indexOf('?');
            String p = q < 0 ? path : path.substring(0, q);
            if (PathGlob.isAmbiguous(p)) {
                return false;
            }
            for (String glob : paths) {
                if (PathGlob.matches(glob, p)) {
                    return true;
                }
            }
            return false;
        }
    }
}
