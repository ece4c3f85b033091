package dev.sluice.proxy.audit;

import dev.sluice.certs.PinResult;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Verdict;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The audit record of one connection or request while it is in progress: handlers fill it in as the
 * exchange proceeds, and {@link #emit()} turns it into exactly one {@link AuditRecord}.
 *
 * <p>The start time is taken at construction: the wall time from the injected {@link Clock} (the
 * record's {@code time}) and {@link System#nanoTime()} for {@code duration_ms}.
 *
 * <p>Threading: setters are meant to be called from one thread (the channel's event loop); the byte
 * counters may be added to from any thread, and {@link #emit()} may run on another thread. All
 * state is volatile or atomic, so emit sees every value set before it. Values set after emit are
 * ignored.
 *
 * <p>Fixed-vocabulary fields take typed values: {@link Listener}, {@link TlsMode}, {@link PinResult},
 * and the {@code decision}, {@code reason}, {@code rule} and {@code address_class} of a record come
 * from one {@link Decision} ({@link #decision(Decision)}), so no handler spells them as strings.
 */
public final class AuditEvent {

    /** Longest {@code error} kept, in characters. */
    public static final int MAX_ERROR_CHARS = 200;
    /** Longest {@code url.path} kept, in characters (after masking). */
    public static final int MAX_PATH_CHARS = 2048;

    static final String MASK = "***";


    private final AuditSink sink;
    private final LongSupplier nanoTime;
    private final Instant startTime;
    private final long startNanos;
    private final String eventId;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong bytesSent = new AtomicLong();
    private final AtomicLong bytesReceived = new AtomicLong();
    private final Map<String, Long> redactions = new ConcurrentHashMap<>();

    private volatile @Nullable String extension;
    private volatile @Nullable String clientAddress;
    private volatile @Nullable Integer clientPort;
    private volatile @Nullable String listener;
    private volatile @Nullable String method;
    private volatile @Nullable String scheme;
    private volatile @Nullable String serverAddress;
    private volatile @Nullable Integer serverPort;
    private volatile @Nullable String urlPath;
    private volatile @Nullable String tlsMode;
    private volatile @Nullable String tlsSni;
    private volatile @Nullable String decision;
    private volatile @Nullable String outcome;
    private volatile @Nullable String reason;
    private volatile @Nullable String addressClass;
    private volatile @Nullable String rule;
    private volatile @Nullable String peerAddress;
    private volatile @Nullable Integer statusCode;
    private volatile @Nullable String pin;
    private volatile @Nullable String upstreamProtocol;
    private volatile @Nullable String error;
    private volatile @Nullable String approval;
    private volatile @Nullable String approvalBy;
    private volatile @Nullable String approvalScope;
    private final Set<String> credentials = ConcurrentHashMap.newKeySet();
    private final Map<String, Long> redFlags = new ConcurrentHashMap<>();
    private volatile @Nullable String websocketMode;
    private final AtomicLong websocketMessagesSent = new AtomicLong(-1);
    private final AtomicLong websocketMessagesReceived = new AtomicLong(-1);
    private volatile @Nullable String llmModel;
    private final AtomicLong llmInputTokens = new AtomicLong(-1);
    private final AtomicLong llmOutputTokens = new AtomicLong(-1);
    private volatile boolean capture;

    /**
     * Starts an event now.
     *
     * @param sink where {@link #emit()} hands the record, usually the {@link AuditLog}
     * @param clock the wall clock for the record's {@code time}
     */
    public AuditEvent(AuditSink sink, Clock clock) {
        this(sink, clock, System::nanoTime);
    }

    AuditEvent(AuditSink sink, Clock clock, LongSupplier nanoTime) {
        this.sink = Objects.requireNonNull(sink, "sink");
        this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
        this.startTime = Objects.requireNonNull(clock, "clock").instant();
        this.startNanos = nanoTime.getAsLong();
        this.eventId = hex16(ThreadLocalRandom.current().nextLong());
    }

    /** {@code value} as 16 lowercase hex digits, zero-padded: {@code String.format("%016x")} without its parser. */
    static String hex16(long value) {
        byte[] out = new byte[16];
        for (int i = 15; i >= 0; i--) {
            out[i] = (byte) "0123456789abcdef".charAt((int) (value & 0xf));
            value >>>= 4;
        }
        return new String(out, java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    /** Returns this event's id (16 lowercase hex characters), e.g. to quote in a response body. */
    public String eventId() {
        return eventId;
    }

    /** Sets the identified extension's name. */
    public AuditEvent extension(String name) {
        this.extension = name;
        return this;
    }

    /** Sets {@code client.address} (the IP, never a resolved name) and {@code client.port}. */
    public AuditEvent client(InetSocketAddress downstream) {
        Objects.requireNonNull(downstream, "downstream");
        InetAddress address = downstream.getAddress();
        this.clientAddress = address != null ? address.getHostAddress() : downstream.getHostString();
        this.clientPort = downstream.getPort();
        return this;
    }

    /** Sets {@code listener}. */
    public AuditEvent listener(Listener listener) {
        this.listener = Objects.requireNonNull(listener, "listener").label();
        return this;
    }

    /** Sets the HTTP method, or {@code CONNECT} for a tunnel. */
    public AuditEvent method(String method) {
        this.method = method;
        return this;
    }

    /** Sets {@code url.scheme}: {@code http} or {@code https}. */
    public AuditEvent scheme(String scheme) {
        this.scheme = scheme;
        return this;
    }

    /**
     * Sets {@code server.address} and {@code server.port}: the canonical upstream target.
     *
     * @param host canonical host name or address literal
     * @param port TCP port, 0 to 65535
     */
    public AuditEvent server(String host, int port) {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port: " + port + " (expected: 0-65535)");
        }
        this.serverAddress = host;
        this.serverPort = port;
        return this;
    }

    /**
     * Sets {@code url.path} from a request-target, masking every query value (see
     * {@link #maskQuery(String)}): {@code /a?x=1&token=abc} becomes {@code /a?x=***&token=***}.
     */
    public AuditEvent urlPath(String requestTarget) {
        this.urlPath = maskTarget(requestTarget);
        return this;
    }

    /** Scans recorded paths with every built-in detector (built once: the automaton is shared, read-only). */
    private static final dev.sluice.rules.redact.HeaderScanner PATH_SCANNER = new dev.sluice.rules.redact.HeaderScanner(
            dev.sluice.rules.redact.DetectorSet.builtins(), Set.of());
    /** The shortest run of a target that is scanned for a credential ({@link #longRun}). */
    private static final int MIN_SCANNED_PATH_CHARS = 16;

    /**
     * {@link #maskQuery(String)}, then every credential a built-in detector finds in what is left (a token
     * in a path segment, a query parameter without {@code =}) replaced by its percent-encoded marker
     * ({@code /repos/%5BREDACTED%3Agithub-pat%5D}): a record never holds a credential, whatever the
     * policy's redaction settings.
     *
     * @param requestTarget origin-form or absolute-form request-target; null gives null
     */
    public static String maskTarget(String requestTarget) {
        String masked = maskQuery(requestTarget);
        if (masked == null || !longRun(masked)) {
            return masked;
        }
        return PATH_SCANNER.scanTarget(masked).target();
    }

    /**
     * Whether {@code target} has a run of {@value #MIN_SCANNED_PATH_CHARS} or more characters between
     * {@code / ? & ; ,}. A target without one (most API paths; query values are masked already) is not
     * scanned: the scan costs about 10 µs of CPU per target, and a token shorter than that in a path
     * segment is not looked for.
     */
    private static boolean longRun(String target) {
        int run = 0;
        for (int i = 0; i < target.length(); i++) {
            char c = target.charAt(i);
            run = c == '/' || c == '?' || c == '&' || c == ';' || c == ',' ? 0 : run + 1;
            if (run >= MIN_SCANNED_PATH_CHARS) {
                return true;
            }
        }
        return false;
    }

    /** Sets {@code tls.mode}. */
    public AuditEvent tlsMode(TlsMode mode) {
        this.tlsMode = Objects.requireNonNull(mode, "mode").label();
        return this;
    }

    /** Sets {@code tls.sni}, the server name of the downstream ClientHello. */
    public AuditEvent tlsSni(String sni) {
        this.tlsSni = sni;
        return this;
    }

    /**
     * Sets {@code decision}, {@code reason} and {@code rule} from a rules decision, and for an
     * address-class denial {@code address_class} (e.g. {@code metadata}); the reason is always the one
     * word of the reason set, so the record and the metrics label spell it one way. This is the only
     * way to set them.
     *
     * <p>An upstream failure ({@link dev.sluice.rules.decision.Reason#upstreamFailure()}: 502/504 after
     * the policy let the exchange through) is not a denial: {@code decision} keeps what the policy
     * decided ({@code allow}, or {@code would_deny} in report mode; {@code allow} when nothing was
     * recorded before, as only permitted traffic is dialled), {@code outcome} becomes
     * {@link Outcome#UPSTREAM_FAILURE}, and {@code reason} and {@code rule} name the failure and the
     * check that saw it ({@code upstream_connect_failed}, {@code network.connect}).
     */
    public AuditEvent decision(Decision d) {
        Objects.requireNonNull(d, "d");
        if (d.reason().upstreamFailure()) {
            if (decision == null) {
                this.decision = Verdict.ALLOW.label();
            }
            this.outcome = Outcome.UPSTREAM_FAILURE.label();
        } else {
            this.decision = d.verdict().label();
            this.outcome = null;
        }
        this.reason = d.reason().label();
        this.rule = d.ruleId();
        this.addressClass = d.addressClass() == null ? null : d.addressClass().label();
        return this;
    }

    /** Sets {@code network.peer.address}, the upstream IP address actually dialled. */
    public AuditEvent peerAddress(String address) {
        this.peerAddress = address;
        return this;
    }

    /** Sets {@code http.response.status_code}, the status sent downstream. */
    public AuditEvent statusCode(int status) {
        this.statusCode = status;
        return this;
    }

    /**
     * Sets {@code upstream.protocol}: {@code h2} or {@code http/1.1}, the protocol of an intercepted
     * exchange's upstream leg (the ALPN name).
     */
    public AuditEvent upstreamProtocol(String protocol) {
        this.upstreamProtocol = checkWord("upstream.protocol", protocol, Set.of("h2", "http/1.1"));
        return this;
    }

    /** Sets {@code pin}, the result of the upstream handshake's pin check. */
    public AuditEvent pin(PinResult pinResult) {
        this.pin = Objects.requireNonNull(pinResult, "pinResult").label();
        return this;
    }

    /** Adds {@code count} redactions by detector {@code detectorId} (thread-safe). */
    public AuditEvent addRedactions(String detectorId, long count) {
        Objects.requireNonNull(detectorId, "detectorId");
        if (count < 0) {
            throw new IllegalArgumentException("count: " + count + " (expected: >= 0)");
        }
        if (count > 0) {
            redactions.merge(detectorId, count, Long::sum);
        }
        return this;
    }

    /** Adds to {@code bytes.sent}, bytes toward the internet (thread-safe). */
    public AuditEvent addBytesSent(long bytes) {
        bytesSent.addAndGet(checkBytes(bytes));
        return this;
    }

    /** Adds to {@code bytes.received}, bytes from the internet (thread-safe). */
    public AuditEvent addBytesReceived(long bytes) {
        bytesReceived.addAndGet(checkBytes(bytes));
        return this;
    }

    /**
     * Sets {@code error}: only the first line is kept, control characters become spaces, and the
     * text is cut to {@value #MAX_ERROR_CHARS} characters. Pass a short description, never a stack
     * trace; a null clears it.
     */
    public AuditEvent error(@Nullable String message) {
        this.error = oneLine(message);
        return this;
    }

    /** Sets {@code error} from a failure: its simple class name and message, as {@link #error(String)}. */
    public AuditEvent error(Throwable cause) {
        Objects.requireNonNull(cause, "cause");
        String message = cause.getMessage();
        String name = cause.getClass().getSimpleName();
        return error(message == null || message.isBlank() ? name : name + ": " + message);
    }

    /**
     * Records the outcome of holding this request for approval.
     *
     * @param outcome {@code granted}, {@code denied} or {@code timeout}
     * @param by who answered (one line, at most {@value #MAX_ERROR_CHARS} characters kept), or null
     * @param scope {@code once}, {@code session} or {@code always} when granted, else null
     */
    public AuditEvent approval(String outcome, @Nullable String by, @Nullable String scope) {
        this.approval = checkWord("approval", outcome, Set.of("granted", "denied", "timeout"));
        this.approvalBy = by == null ? null : oneLine(by);
        this.approvalScope = scope == null ? null : checkWord("approval.scope", scope, Set.of("once", "session", "always"));
        return this;
    }

    /** Adds a credential name to {@code credentials}: Sluice injected that credential (thread-safe). */
    public AuditEvent credentialInjected(String name) {
        credentials.add(Objects.requireNonNull(name, "name"));
        return this;
    }

    /** Adds one match of a red-flag rule to {@code red_flags} (thread-safe). */
    public AuditEvent addRedFlag(String ruleId) {
        redFlags.merge(Objects.requireNonNull(ruleId, "ruleId"), 1L, Long::sum);
        return this;
    }

    /**
     * Marks this record as an upgraded WebSocket connection.
     *
     * @param mode {@code plain} (ws:// through the explicit listener), {@code relay} or {@code inspect}
     */
    public AuditEvent websocketMode(String mode) {
        this.websocketMode = checkWord("websocket.mode", mode, Set.of("plain", "relay", "inspect"));
        return this;
    }

    /** Counts one whole WebSocket message from the client toward the internet (thread-safe). */
    public AuditEvent addWebsocketMessageSent() {
        websocketMessagesSent.updateAndGet(n -> n < 0 ? 1 : n + 1);
        return this;
    }

    /** Counts one whole WebSocket message from the internet toward the client (thread-safe). */
    public AuditEvent addWebsocketMessageReceived() {
        websocketMessagesReceived.updateAndGet(n -> n < 0 ? 1 : n + 1);
        return this;
    }

    /** Sets {@code llm.model}, the model an LLM response named (one line, cut like {@link #error(String)}). */
    public AuditEvent llmModel(String model) {
        this.llmModel = oneLine(model);
        return this;
    }

    /**
     * Adds token usage an LLM response reported (thread-safe; several responses on one record add up).
     *
     * @param inputTokens input tokens, {@code >= 0}
     * @param outputTokens output tokens, {@code >= 0}
     */
    public AuditEvent addLlmUsage(long inputTokens, long outputTokens) {
        long in = checkBytes(inputTokens);
        long out = checkBytes(outputTokens);
        llmInputTokens.updateAndGet(n -> Math.max(n, 0) + in);
        llmOutputTokens.updateAndGet(n -> Math.max(n, 0) + out);
        return this;
    }

    /** Marks this exchange as sampled for capture ({@code capture: true}, policy {@code capture}). */
    public AuditEvent captured() {
        this.capture = true;
        return this;
    }

    /** Returns the extension set so far, or null (for a refusal's JSON body). */
    public @Nullable String extensionOrNull() {
        return extension;
    }

    /** Returns the {@code server.address} set so far, or null (for a refusal's JSON body). */
    public @Nullable String serverAddressOrNull() {
        return serverAddress;
    }

    /** Returns the error recorded so far, or null when there is none. */
    public @Nullable String errorOrNull() {
        return error;
    }

    /** Returns the {@code decision} set so far ({@code allow}, {@code deny}, {@code would_deny}), or null. */
    public @Nullable String decisionOrNull() {
        return decision;
    }

    /** Returns the {@code reason} set so far, or null. */
    public @Nullable String reasonOrNull() {
        return reason;
    }

    /** Returns the {@code rule} set so far, or null. */
    public @Nullable String ruleOrNull() {
        return rule;
    }

    /** Returns the {@code http.response.status_code} set so far, or null. */
    public @Nullable Integer statusCodeOrNull() {
        return statusCode;
    }

    /** Answers whether {@link #emit()} has run. */
    public boolean isEmitted() {
        return closed.get();
    }

    /**
     * Builds the record and hands it to the sink, exactly once per event.
     *
     * @return true if this call emitted the record; false if the event was emitted before
     * @throws IllegalStateException if the sink no longer accepts records (the audit log was closed);
     *     the event still counts as emitted
     */
    public boolean emit() {
        if (!closed.compareAndSet(false, true)) {
            return false;
        }
        long durationMs = Math.max(0, (nanoTime.getAsLong() - startNanos) / 1_000_000);
        sink.write(new AuditRecord(startTime, eventId, extension, clientAddress, clientPort, listener,
                method, scheme, serverAddress, serverPort, urlPath, tlsMode, tlsSni, decision, reason,
                rule, peerAddress, statusCode, bytesSent.get(), bytesReceived.get(), durationMs,
                Map.copyOf(redactions), pin, error, addressClass, approval, approvalBy, approvalScope,
                List.copyOf(credentials), websocketMode, countOrNull(websocketMessagesSent),
                countOrNull(websocketMessagesReceived), llmModel, countOrNull(llmInputTokens),
                countOrNull(llmOutputTokens), Map.copyOf(redFlags), capture ? Boolean.TRUE : null,
                upstreamProtocol, outcome));
        return true;
    }

    /** Answers whether {@code target} starts with {@code scheme://} (RFC 3986 section 3.1), without a regex. */
    private static boolean startsWithScheme(String target) {
        if (target.isEmpty() || !isAsciiLetter(target.charAt(0))) {
            return false;
        }
        for (int i = 1; i < target.length(); i++) {
            char c = target.charAt(i);
            if (c == ':') {
                return target.startsWith("//", i + 1);
            }
            if (!(isAsciiLetter(c) || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-')) {
                return false;
            }
        }
        return false;
    }

    private static boolean isAsciiLetter(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    /**
     * Returns a request-target with every query value replaced by {@code ***}: {@code /a?x=1&b}
     * becomes {@code /a?x=***&b} (a parameter without {@code =} is kept as is). A fragment is dropped.
     * An absolute-form target ({@code http://user:pw@host/p?q=1}) loses its scheme and authority, so
     * user-info never reaches the log. The result is cut to {@value #MAX_PATH_CHARS} characters.
     *
     * @param requestTarget origin-form or absolute-form request-target; null gives null
     */
    public static @Nullable String maskQuery(@Nullable String requestTarget) {
        if (requestTarget == null) {
            return null;
        }
        String target = requestTarget;
        // Origin-form (the common case) never needs the scheme check.
        if (!target.startsWith("/") && startsWithScheme(target)) {
            int authorityStart = target.indexOf("://") + 3;
            int pathStart = indexOfAny(target, authorityStart, "/?#");
            target = pathStart < 0 ? "/" : target.substring(pathStart);
            if (!target.startsWith("/")) {
                target = "/" + target;
            }
        }
        int hash = target.indexOf('#');
        if (hash >= 0) {
            target = target.substring(0, hash);
        }
        int q = target.indexOf('?');
        if (q >= 0) {
            StringBuilder out = new StringBuilder(target.length());
            out.append(target, 0, q + 1);
            String query = target.substring(q + 1);
            int start = 0;
            while (start <= query.length()) {
                int amp = query.indexOf('&', start);
                int end = amp < 0 ? query.length() : amp;
                String param = query.substring(start, end);
                int eq = param.indexOf('=');
                out.append(eq < 0 ? param : param.substring(0, eq + 1) + MASK);
                if (amp < 0) {
                    break;
                }
                out.append('&');
                start = amp + 1;
            }
            target = out.toString();
        }
        return target.length() > MAX_PATH_CHARS ? target.substring(0, MAX_PATH_CHARS) : target;
    }

    static @Nullable String oneLine(@Nullable String message) {
        if (message == null) {
            return null;
        }
        int end = message.length();
        for (int i = 0; i < message.length(); i++) {
            char c = message.charAt(i);
            if (c == '\n' || c == '\r') {
                end = i;
                break;
            }
        }
        StringBuilder out = new StringBuilder(Math.min(end, MAX_ERROR_CHARS));
        for (int i = 0; i < end; i++) {
            char c = message.charAt(i);
            out.append(Character.isISOControl(c) ? ' ' : c);
        }
        String line = out.toString().strip();
        if (line.length() > MAX_ERROR_CHARS) {
            line = line.substring(0, MAX_ERROR_CHARS);
        }
        return line;
    }

    private static int indexOfAny(String s, int from, String chars) {
        for (int i = from; i < s.length(); i++) {
            if (chars.indexOf(s.charAt(i)) >= 0) {
                return i;
            }
        }
        return -1;
    }

    private static @Nullable String checkWord(String field, @Nullable String value, Set<String> allowed) {
        if (value != null && !allowed.contains(value)) {
            throw new IllegalArgumentException(field + ": " + value + " (expected: one of " + allowed + ")");
        }
        return value;
    }

    private static @Nullable Long countOrNull(AtomicLong count) {
        long n = count.get();
        return n < 0 ? null : n;
    }

    private static long checkBytes(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        return bytes;
    }
}
