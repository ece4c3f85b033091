package dev.sluice.rules.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

/**
 * The {@code approvals} section: how a request that misses the allowlist (never an address-class,
 * self-loop or malformed one) is held while a person is asked (docs/policy.md "approvals").
 *
 * @param webhook the backend: an {@code http} or {@code https} URL Sluice POSTs each question to
 * @param timeout how long a request is held at most; no answer by then denies ({@code approval: timeout})
 * @param scopes the scopes an answer may grant: {@code once}, {@code session}, {@code always}
 * @param overlay the fragment {@code always} writes rules into (absolute; one of the policy's includes),
 *                or null when {@code always} is not among the scopes
 */
public record ApprovalSettings(URI webhook, Duration timeout, Set<String> scopes, Path overlay) {

    /** Every scope an answer may name. */
    public static final Set<String> ALL_SCOPES = Set.of("once", "session", "always");
    /** The default hold. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
    /** The longest hold a policy may ask for. */
    public static final Duration MAX_TIMEOUT = Duration.ofMinutes(5);

    public ApprovalSettings {
        scopes = Set.copyOf(scopes);
    }
}
