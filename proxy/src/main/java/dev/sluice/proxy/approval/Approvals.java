package dev.sluice.proxy.approval;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.policy.ApprovalSettings;
import dev.sluice.rules.target.Target;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks a person whether a request that missed the allowlist may go (docs/policy.md "approvals").
 *
 * <p>With {@code backend: admin} the question waits in memory ({@link #pending()}) until
 * {@link #answer} is called for its id (the admin listener's {@code POST /approvals/<id>/allow|deny}, which
 * {@code sluice approvals} uses) or {@code approvals.timeout} passes. With a webhook backend: one
 * {@code POST} of {@code application/json}
 * {@code {"id","extension","host","port","method","path","scopes"}} ({@code method} and {@code path}
 * null for a tunnel; {@code path} without its query) to {@code approvals.backend}, answered {@code 200}
 * with {@code {"decision":"allow"|"deny","scope":"once"|"session"|"always","by":"<who>"}}. Anything
 * else — another status, a body that does not parse, a scope the policy does not offer — denies. No
 * answer within {@code approvals.timeout} is {@code timeout}, which denies.
 *
 * <p>Scopes: {@code once} allows this request; {@code session} allows the extension to that host and
 * port until Sluice restarts (later requests are granted without asking, {@code approval.by: session});
 * {@code always} also writes an allow rule into {@code approvals.overlay} (atomically: temp file and
 * rename) and reloads the policy. Nothing here runs on an event loop: the webhook call is asynchronous
 * on the HTTP client's threads, and the overlay is written there.
 */
public final class Approvals implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Approvals.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /**
     * The answer to one question.
     *
     * @param result {@code granted}, {@code denied} or {@code timeout}
     * @param scope the scope granted, or null
     * @param by who answered, or null
     * @param error why a question failed (for the record's {@code error}), or null
     */
    public record Outcome(String result, String scope, String by, String error) {
        /** Answers whether the request may go. */
        public boolean granted() {
            return result.equals("granted");
        }
    }

    /**
     * A question waiting for a person on the admin backend.
     *
     * @param id the held request's audit event id
     * @param extension who asks
     * @param host the canonical target host
     * @param port the target port
     * @param method the request method, or null for a tunnel
     * @param path the request path without its query, or null for a tunnel
     * @param scopes the scopes an answer may grant
     * @param askedAt when the request was held
     * @param expiresAt when the hold ends with {@code approval: timeout}
     */
    public record Question(String id, String extension, String host, int port, String method, String path,
                           Set<String> scopes, java.time.Instant askedAt, java.time.Instant expiresAt) {
    }

    /** What {@link #answer} did. */
    public enum AnswerResult {
        /** The held request got the answer. */
        ANSWERED,
        /** No request waits under that id (never held, answered already, or timed out). */
        NOT_FOUND,
        /** The scope is not among {@code approvals.scopes}; the request still waits. */
        SCOPE_NOT_OFFERED
    }

    private record Held(Question question, ApprovalSettings settings, Target target, RequestInfo request, String key,
                        CompletableFuture<Outcome> outcome) {
    }

    private final ExecutorService executor;
    private final HttpClient client;
    private final java.util.Map<String, Held> held = new ConcurrentHashMap<>();
    private final Set<String> session = ConcurrentHashMap.newKeySet();
    private final Runnable reload;
    private final Object overlayLock = new Object();

    /** @param reload reloads the policy after an {@code always} rule was written (not on an event loop) */
    public Approvals(Runnable reload) {
        this.reload = reload;
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "sluice-approvals");
            t.setDaemon(true);
            return t;
        });
        // Never through a proxy: the backend is the operator's, reached directly.
        this.client = HttpClient.newBuilder().executor(executor).proxy(HttpClient.Builder.NO_PROXY)
                .connectTimeout(Duration.ofSeconds(10)).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    /**
     * Asks whether {@code extension} may reach {@code target} with {@code request} (null for a tunnel).
     * A session grant answers at once. Never blocks; the future never completes exceptionally.
     */
    public CompletableFuture<Outcome> ask(ApprovalSettings settings, String extension, Target target,
                                          RequestInfo request, String eventId) {
        String key = extension + "\u0000" + target.host() + "\u0000" + target.port();
        if (session.contains(key)) {
            return CompletableFuture.completedFuture(new Outcome("granted", "session", "session", null));
        }
        if (settings.backend() == ApprovalSettings.Backend.ADMIN) {
            return hold(settings, extension, target, request, eventId, key);
        }
        ObjectNode q = JSON.createObjectNode();
        q.put("id", eventId);
        q.put("extension", extension);
        q.put("host", target.host());
        q.put("port", target.port());
        q.put("method", request == null ? null : request.method());
        q.put("path", request == null ? null : request.path());
        ArrayNode scopes = q.putArray("scopes");
        settings.scopes().stream().sorted().forEach(scopes::add);
        HttpRequest http = HttpRequest.newBuilder(settings.webhook()).timeout(settings.timeout())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(q.toString(), StandardCharsets.UTF_8)).build();
        return client.sendAsync(http, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8))
                .orTimeout(settings.timeout().toMillis() + 100, java.util.concurrent.TimeUnit.MILLISECONDS)
                .handle((response, failure) -> {
                    if (failure != null) {
                        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                                ? failure.getCause() : failure;
                        if (cause instanceof HttpTimeoutException || cause instanceof TimeoutException) {
                            return new Outcome("timeout", null, null, "approval backend did not answer within "
                                    + settings.timeout().toMillis() + " ms");
                        }
                        return new Outcome("denied", null, null, "approval backend failed: "
                                + cause.getClass().getSimpleName());
                    }
                    return answer(settings, extension, target, request, key, response);
                });
    }

    private Outcome answer(ApprovalSettings settings, String extension, Target target, RequestInfo request, String key,
                           HttpResponse<String> response) {
        if (response.statusCode() != 200) {
            return new Outcome("denied", null, null, "approval backend answered " + response.statusCode());
        }
        JsonNode a;
        try {
            a = JSON.readTree(response.body());
        } catch (IOException e) {
            return new Outcome("denied", null, null, "approval backend answer is not JSON");
        }
        String by = a.path("by").asText(null);
        String decision = a.path("decision").asText("");
        if (!decision.equals("allow")) {
            return new Outcome("denied", null, by, null);
        }
        String scope = a.path("scope").asText("once");
        if (!settings.scopes().contains(scope)) {
            return new Outcome("denied", null, by, "approval scope " + scope + " is not among approvals.scopes");
        }
        return grant(settings, extension, target, request, key, scope, by);
    }

    /** Grants with {@code scope} (one of {@code settings.scopes()}); writes the overlay for {@code always}. */
    private Outcome grant(ApprovalSettings settings, String extension, Target target, RequestInfo request, String key,
                          String scope, String by) {
        if (scope.equals("session") || scope.equals("always")) {
            session.add(key);
        }
        if (scope.equals("always")) {
            try {
                writeRule(settings.overlay(), extension, target, request);
                reload.run();
            } catch (IOException | RuntimeException e) {
                log.error("approvals: could not write {}: {}", settings.overlay(), e.toString());
                return new Outcome("granted", "session", by, "could not write approvals.overlay; granted for the session");
            }
        }
        return new Outcome("granted", scope, by, null);
    }

    /**
     * Adds {@code {host, ports: [port]}} (with the method and exact path of a visible request) to
     * {@code extensions.<extension>.allow} of the overlay fragment, unless the same rule is there, and
     * replaces the file atomically. The file is Sluice's: it is rewritten as JSON (valid YAML).
     */
    void writeRule(Path overlay, String extension, Target target, RequestInfo request) throws IOException {
        synchronized (overlayLock) {
            String text = Files.exists(overlay) ? Files.readString(overlay, StandardCharsets.UTF_8) : "";
            JsonNode parsed = text.isBlank() ? null : YAML.readTree(text);
            ObjectNode root = parsed instanceof ObjectNode o ? o : JSON.createObjectNode();
            ObjectNode exts = root.get("extensions") instanceof ObjectNode e ? e : root.putObject("extensions");
            ObjectNode ext = exts.get(extension) instanceof ObjectNode x ? x : exts.putObject(extension);
            ArrayNode allow = ext.get("allow") instanceof ArrayNode l ? l : ext.putArray("allow");
            ObjectNode rule = JSON.createObjectNode();
            if (target.isIpLiteral()) {
                rule.put("cidr", target.host() + (target.isIpv6Literal() ? "/128" : "/32"));
            } else {
                rule.put("host", target.host());
            }
            rule.putArray("ports").add(target.port());
            if (request != null && request.path().indexOf('*') < 0
                    && dev.sluice.rules.internal.PathGlob.validate(request.path()) == null
                    && !dev.sluice.rules.internal.PathGlob.isAmbiguous(request.path())) {
                rule.putArray("methods").add(request.method());
                rule.putArray("paths").add(request.path());
            }
            for (JsonNode existing : allow) {
                if (existing.equals(rule)) {
                    return;
                }
            }
            allow.add(rule);
            Path tmp = overlay.resolveSibling(overlay.getFileName() + ".tmp");
            Files.writeString(tmp, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root) + "\n",
                    StandardCharsets.UTF_8);
            Files.move(tmp, overlay, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
    }

    private CompletableFuture<Outcome> hold(ApprovalSettings settings, String extension, Target target,
                                            RequestInfo request, String eventId, String key) {
        java.time.Instant now = java.time.Instant.now();
        Question question = new Question(eventId, extension, target.host(), target.port(),
                request == null ? null : request.method(), request == null ? null : request.path(),
                settings.scopes(), now, now.plus(settings.timeout()));
        CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        Held h = new Held(question, settings, target, request, key, outcome);
        held.put(eventId, h);
        outcome.whenComplete((o, e) -> held.remove(eventId, h));
        outcome.completeOnTimeout(new Outcome("timeout", null, null, "no answer through the admin listener within "
                + settings.timeout().toMillis() + " ms"), settings.timeout().toMillis(),
                java.util.concurrent.TimeUnit.MILLISECONDS);
        return outcome;
    }

    /** Returns the questions waiting on the admin backend, oldest first. */
    public java.util.List<Question> pending() {
        return held.values().stream().map(Held::question)
                .sorted(java.util.Comparator.comparing(Question::askedAt).thenComparing(Question::id)).toList();
    }

    /**
     * Answers the held request {@code id} on the admin backend. A grant with {@code always} writes the
     * overlay and reloads on this class's own threads (never the caller's, which may be an event loop).
     *
     * @param allow true to allow, false to deny
     * @param scope the scope of a grant ({@code once}, {@code session}, {@code always}); ignored for a denial
     * @param by who answered, recorded as {@code approval.by}
     * @return completes once the held request has its answer, with what happened; never exceptionally
     */
    public CompletableFuture<AnswerResult> answer(String id, boolean allow, String scope, String by) {
        Held h = held.get(id);
        if (h == null || h.outcome().isDone()) {
            return CompletableFuture.completedFuture(AnswerResult.NOT_FOUND);
        }
        if (allow && !h.settings().scopes().contains(scope)) {
            return CompletableFuture.completedFuture(AnswerResult.SCOPE_NOT_OFFERED);
        }
        if (!held.remove(id, h)) {
            return CompletableFuture.completedFuture(AnswerResult.NOT_FOUND);
        }
        return CompletableFuture.supplyAsync(() -> {
            Outcome o = allow ? grant(h.settings(), h.question().extension(), h.target(), h.request(), h.key(), scope, by)
                    : new Outcome("denied", null, by, null);
            return h.outcome().complete(o) ? AnswerResult.ANSWERED : AnswerResult.NOT_FOUND;
        }, executor).exceptionally(e -> {
            h.outcome().complete(new Outcome("denied", null, by, "approval failed: " + e.getClass().getSimpleName()));
            return AnswerResult.ANSWERED;
        });
    }

    @Override
    public void close() {
        executor.shutdownNow();
        held.values().forEach(h -> h.outcome().complete(new Outcome("denied", null, null, "Sluice is shutting down")));
    }

}
