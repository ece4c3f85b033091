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
