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
         * ({@code \\/}), percent-encoded (RFC 3986), and inside base64 and base64url (RFC 4648) at each of
         * the three byte alignments a value can have in a longer encoded run: the characters that encode
         * only the value's bytes ({@link #base64Cores}). For a SigV4 key pair, each of its parts too.
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
                SigV4Signer.KeyPair pair = grant.credential().inject().sigv4() ? SigV4Signer.keyPair(real) : null;
                if (pair != null) {
                    for (String part : new String[] {pair.secretAccessKey(), pair.sessionToken(), pair.accessKeyId()}) {
                        if (part != null) {
                            textForms(forms, part, ph);
                        }
                    }
                }
                textForms(forms, real, ph);
                for (java.util.Base64.Encoder encoder : new java.util.Base64.Encoder[] {
                        java.util.Base64.getEncoder(), java.util.Base64.getUrlEncoder()}) {
                    String[] realCores = base64Cores(encoder, real);
                    String[] phCores = base64Cores(encoder, ph);
                    for (int k = 0; k < 3; k++) {
                        if (realCores[k].length() >= MIN_CORE_CHARS) {
                            forms.put(realCores[k], phCores[k]);
                        }
                    }
                }
            }
            java.util.List<java.util.Map.Entry<String, String>> sorted = new java.util.ArrayList<>(forms.entrySet());
            sorted.sort((a, b) -> b.getKey().length() - a.getKey().length());
            java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
            sorted.forEach(e -> out.put(e.getKey(), e.getValue()));
            return out;
        }

        /** Shorter base64 cores are not replaced (they would match by chance). */
        private static final int MIN_CORE_CHARS = 8;

        private static void textForms(java.util.Map<String, String> forms, String value, String ph) {
            forms.put(value, ph);
            forms.put(value.replace("/", "\\/"), ph);
            forms.put(java.net.URLEncoder.encode(value, java.nio.charset.StandardCharsets.UTF_8), ph);
        }

        /**
         * For {@code k} = 0, 1, 2 preceding bytes: the base64 characters that encode only bits of {@code s}'s
         * UTF-8 bytes when they start at byte {@code k} of a 3-byte group — the part that is the same
         * whatever bytes come before and after it in the encoded run.
         */
        static String[] base64Cores(java.util.Base64.Encoder encoder, String s) {
            byte[] value = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            String[] cores = new String[3];
            for (int k = 0; k < 3; k++) {
                byte[] shifted = new byte[k + value.length];
                System.arraycopy(value, 0, shifted, k, value.length);
                String encoded = encoder.withoutPadding().encodeToString(shifted);
                int from = (8 * k + 5) / 6;
                int to = 8 * (k + value.length) / 6;
                cores[k] = to > from ? encoded.substring(from, to) : "";
            }
            return cores;
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
