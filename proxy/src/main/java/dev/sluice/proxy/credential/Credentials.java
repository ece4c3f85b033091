package dev.sluice.proxy.credential;

import dev.sluice.rules.credential.PlaceholderTable;
import dev.sluice.rules.credential.Placeholders;
import dev.sluice.rules.policy.Policy;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;

/**
 * The running credential state: the placeholder key and, for the running policy snapshot (and the one
 * before it, for exchanges still deciding on it), its placeholder table and vault. {@link #prepare} is
 * called with every policy before it is swapped in, so that a credential that cannot be read fails the
 * load (or reload) instead of the requests.
 */
public final class Credentials implements AutoCloseable {

    /** One policy snapshot's credential state. */
    public record Snapshot(Policy policy, PlaceholderTable table, CredentialVault vault) {

        /**
         * The forms in which an origin could echo a real value of {@code extension}'s credentials, each
         * mapped to the same form of its placeholder, longest first: the value itself, JSON-escaped
         * ({@code \/}), percent-encoded (RFC 3986), base64 and base64url without padding (RFC 4648).
         * Empty when the extension holds no credential whose value is available.
         */
        public java.util.Map<String, String> echoForms(String extension) {
            java.util.Map<String, String> forms = new java.util.LinkedHashMap<>();
            for (var grant : table.grants(extension).values()) {
                String real = vault.value(grant.credential().name());
                if (real == null) {
                    continue;
                }
                String ph = grant.placeholder();
                forms.put(real, ph);
                forms.put(real.replace("/", "\\/"), ph);
                forms.put(java.net.URLEncoder.encode(real, java.nio.charset.StandardCharsets.UTF_8), ph);
                forms.put(base64(java.util.Base64.getEncoder(), real), base64(java.util.Base64.getEncoder(), ph));
                forms.put(base64(java.util.Base64.getUrlEncoder(), real), base64(java.util.Base64.getUrlEncoder(), ph));
            }
            java.util.List<java.util.Map.Entry<String, String>> sorted = new java.util.ArrayList<>(forms.entrySet());
            sorted.sort((a, b) -> b.getKey().length() - a.getKey().length());
            java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
            sorted.forEach(e -> out.put(e.getKey(), e.getValue()));
            return out;
        }

        private static String base64(java.util.Base64.Encoder encoder, String s) {
            return encoder.withoutPadding().encodeToString(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    private final Placeholders placeholders;
    private final Clock clock;
    private final Function<String, String> environment;
    private final ScheduledExecutorService scheduler;
    private volatile Snapshot current;
    private volatile Snapshot previous;

    /**
     * @param placeholders the placeholder key
     * @param environment reads Sluice's environment variables ({@code System::getenv})
     */
    public Credentials(Placeholders placeholders, Clock clock, Function<String, String> environment) {
        this.placeholders = placeholders;
        this.clock = clock;
        this.environment = environment;
        this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "sluice-credential-refresh");
            t.setDaemon(true);
            return t;
        });
    }

    /** Reads the placeholder key of {@code dataDir} (creating it) and starts with the process environment. */
    public static Credentials start(Path dataDir, Clock clock) throws IOException {
        return new Credentials(PlaceholderKey.loadOrCreate(dataDir), clock, System::getenv);
    }

    /** Returns the placeholder key. */
    public Placeholders placeholders() {
        return placeholders;
    }

    /**
     * Reads {@code policy}'s credentials and makes them the running ones (the next request uses them).
     *
     * @throws CredentialLoadException when a credential that is not optional cannot be read; nothing changes
     */
    public synchronized Snapshot prepare(Policy policy) throws CredentialLoadException {
        Snapshot next = new Snapshot(policy, PlaceholderTable.of(policy, placeholders),
                CredentialVault.load(policy, clock, scheduler, environment));
        Snapshot old = previous;
        previous = current;
        current = next;
        if (old != null) {
            old.vault().close();
        }
        return next;
    }

    /**
     * Returns the state for {@code policy}: the running or the previous snapshot's (compared by
     * identity), else the running one re-derived for it (a policy that was never prepared sees every
     * credential as unavailable, which fails closed).
     */
    public Snapshot forPolicy(Policy policy) {
        Snapshot c = current;
        if (c != null && c.policy() == policy) {
            return c;
        }
        Snapshot p = previous;
        if (p != null && p.policy() == policy) {
            return p;
        }
        return new Snapshot(policy, PlaceholderTable.of(policy, placeholders), CredentialVault.empty(clock));
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
        Snapshot c = current;
        Snapshot p = previous;
        if (c != null) {
            c.vault().close();
        }
        if (p != null) {
            p.vault().close();
        }
    }
}
