package dev.sluice.rules.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The {@code approvals} section: how a request that misses the allowlist (never an address-class,
 * self-loop or malformed one) is held while a person is asked (docs/policy.md "approvals").
 *
 * @param backend who is asked: a webhook, or a person through the admin listener ({@code sluice approvals})
 * @param webhook with {@link Backend#WEBHOOK}: the {@code http} or {@code https} URL Sluice POSTs each
 *                question to; null with {@link Backend#ADMIN}
 * @param timeout how long a request is held at most; no answer by then denies ({@code approval: timeout})
 * @param scopes the scopes an answer may grant: {@code once}, {@code session}, {@code always}
 * @param overlay the fragment {@code always} writes rules into (absolute; one of the policy's includes),
 *                or null when {@code always} is not among the scopes
 */
public record ApprovalSettings(Backend backend, @Nullable URI webhook, Duration timeout, Set<String> scopes,
                               @Nullable Path overlay) {

    /** Where the questions go ({@code approvals.backend}). */
    public enum Backend {
        /** {@code approvals.backend: <http(s) URL>}: one JSON POST per question. */
        WEBHOOK,
        /**
         * {@code approvals.backend: admin}: questions wait on the admin listener ({@code GET /approvals},
         * {@code POST /approvals/<id>/allow|deny}, bearer token from the data dir) for
         * {@code sluice approvals list | allow | deny}.
         */
        ADMIN
    }

    /** Every scope an answer may name. */
    public static final Set<String> ALL_SCOPES = Set.of("once", "session", "always");
    /** The default hold. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    /** The longest hold a policy may ask for. */
    public static final Duration MAX_TIMEOUT = Duration.ofMinutes(5);

    public ApprovalSettings {
        java.util.Objects.requireNonNull(backend, "backend");
        if ((backend == Backend.WEBHOOK) != (webhook != null)) {
            throw new IllegalArgumentException("a webhook URL exactly when the backend is a webhook");
        }
        scopes = Set.copyOf(scopes);
    }
}
