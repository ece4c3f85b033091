package dev.sluice.proxy.audit;

import dev.sluice.rules.policy.AuditSettings;
import dev.sluice.rules.redflag.RedFlagAction;
import dev.sluice.rules.redflag.RedFlagSettings;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.logs.LogRecordBuilder;
import io.opentelemetry.api.logs.Logger;
import io.opentelemetry.api.logs.Severity;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.logs.data.LogRecordData;
import io.opentelemetry.sdk.logs.export.LogRecordExporter;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.slf4j.LoggerFactory;

/**
 * The copies of the audit records that leave the process: one JSON line per record on standard output
 * ({@code audit.stdout: true}) and one OpenTelemetry log record per record over OTLP/HTTP protobuf (on
 * when {@code OTEL_EXPORTER_OTLP_ENDPOINT} or {@code OTEL_EXPORTER_OTLP_LOGS_ENDPOINT} is set), each in
 * the {@code audit.format} shape ({@code sluice} or {@code ocsf}, {@link OcsfMapper}). The hash-chained
 * file ({@link AuditLog}) stays the source of truth: a record that cannot be exported is counted and
 * stays in the file; an export problem never refuses a request.
 *
 * <p>Threads and bounds: {@link #write(AuditRecord)} only offers the record to a bounded queue of
 * {@value #QUEUE_CAPACITY} records and never blocks (an event loop calls it); when the queue is full the
 * record is dropped from the export and counted ({@code queue_full}). One daemon thread, {@value
 * #THREAD_NAME}, drains it: it writes the standard-output lines and emits the log records into the
 * OpenTelemetry SDK's batch processor (its {@code OTEL_BLRP_*} settings apply: batches of up to 512,
 * every second by default). The thread waits while the SDK's queue is full rather than let the SDK drop
 * records unseen, so every record is either exported or counted. A batch the exporter could not deliver
 * after the SDK's retries is counted ({@code export_failed}); failures are logged at most once a second.
 *
 * <p>Configuration: the OpenTelemetry SDK's autoconfigure reads the standard variables
 * ({@code OTEL_EXPORTER_OTLP_[LOGS_]ENDPOINT}, {@code _HEADERS}, {@code _TIMEOUT}, {@code _COMPRESSION},
 * {@code _CERTIFICATE}, {@code _CLIENT_KEY}, {@code _CLIENT_CERTIFICATE}, {@code OTEL_SERVICE_NAME},
 * {@code OTEL_RESOURCE_ATTRIBUTES}, {@code OTEL_BLRP_*}) and their {@code otel.*} system properties. The
 * protocol is always {@code http/protobuf}; traces and metrics are never exported this way
 * ({@code service.name} defaults to {@code sluice}).
 */
public final class AuditExport implements AuditSink, Closeable {

    /** The export thread's name. */
    public static final String THREAD_NAME = "sluice-audit-export";
    /** Records that may wait for the export thread; more are dropped from the export and counted. */
    public static final int QUEUE_CAPACITY = 8192;
    /** The instrumentation scope name of the exported log records. */
    public static final String SCOPE = "dev.sluice.audit";
    /** The OpenTelemetry event name of every exported record. */
    public static final String EVENT_NAME = "sluice.audit";
    /** OpenTelemetry GenAI attribute: the model the LLM response named (the record's {@code llm.model}). */
    public static final String GEN_AI_RESPONSE_MODEL = "gen_ai.response.model";
    /** OpenTelemetry GenAI attribute: input tokens the response reported ({@code llm.usage.input_tokens}). */
    public static final String GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens";
    /** OpenTelemetry GenAI attribute: output tokens the response reported ({@code llm.usage.output_tokens}). */
    public static final String GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens";
    /** The ids of the red-flag rules that matched, sorted (string array). */
    public static final String RED_FLAG_RULES = "sluice.red_flag.rules";
    /** The strongest action of the matched red-flag rules: {@code log}, {@code alert} or {@code block}. */
    public static final String RED_FLAG_ACTION = "sluice.red_flag.action";
    /** Prefix of one count attribute per matched red-flag rule: {@code sluice.red_flags.<id>}. */
    public static final String RED_FLAG_COUNT_PREFIX = "sluice.red_flags.";
    /** {@code true} when the exchange was captured (the record's {@code capture}). */
    public static final String CAPTURE = "sluice.capture";
    /** How long {@link #close()} waits for queued records to be exported, in milliseconds. */
    static final long CLOSE_TIMEOUT_MILLIS = 10_000;

    private static final org.slf4j.Logger log = LoggerFactory.getLogger(AuditExport.class);
    private static final long LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    // The SDK reports each failed export itself through java.util.logging; Sluice counts and rate-limits
    // them instead. Held strongly: JUL keeps loggers only weakly.
    private static final java.util.logging.Logger OTEL_JUL = java.util.logging.Logger.getLogger("io.opentelemetry");

    /** Why a record did not leave: the {@code reason} label of {@code sluice_audit_export_failures_total}. */
    public enum Failure {
        /** The bounded queue was full (the export thread or the collector is too slow). */
        QUEUE_FULL,
        /** The OTLP exporter could not deliver the batch (after the SDK's retries). */
        EXPORT_FAILED,
        /** Writing to standard output failed. */
        STDOUT_FAILED;

        /** Returns the label value, e.g. {@code queue_full}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final AuditSettings.Format format;
    private final Supplier<RedFlagSettings> redFlags;
    private final OutputStream stdout;
    private final OpenTelemetrySdk sdk;
    private final Logger logger;
    private final Semaphore sdkSlots;
    private final BlockingQueue<AuditRecord> queue = new ArrayBlockingQueue<>(QUEUE_CAPACITY);
    private final Map<Failure, AtomicLong> failures = new HashMap<>();
    private final AtomicLong exportedOtlp = new AtomicLong();
    private final AtomicLong writtenStdout = new AtomicLong();
    private final Thread thread;
    private volatile boolean closing;
    private final Object logLock = new Object();
    private long lastLogNanos;
    private long unloggedFailures;

    private AuditExport(AuditSettings.Format format, OutputStream stdout, Map<String, String> otel,
                        Supplier<RedFlagSettings> redFlags) {
        this.format = Objects.requireNonNull(format, "format");
        this.redFlags = Objects.requireNonNull(redFlags, "redFlags");
        this.stdout = stdout;
        for (Failure f : Failure.values()) {
            failures.put(f, new AtomicLong());
        }
        if (otel != null) {
            OTEL_JUL.setLevel(java.util.logging.Level.OFF);
            AtomicReference<Semaphore> slots = new AtomicReference<>();
            this.sdk = AutoConfiguredOpenTelemetrySdk.builder()
                    .addPropertiesSupplier(() -> Map.of("otel.service.name", "sluice"))
                    .addPropertiesCustomizer(config -> {
                        Map<String, String> forced = new HashMap<>(otel);
                        forced.put("otel.logs.exporter", "otlp");
                        forced.put("otel.traces.exporter", "none");
                        forced.put("otel.metrics.exporter", "none");
                        forced.put("otel.exporter.otlp.protocol", "http/protobuf");
                        forced.put("otel.exporter.otlp.logs.protocol", "http/protobuf");
                        return forced;
                    })
                    .addLogRecordExporterCustomizer((exporter, config) -> {
                        slots.set(new Semaphore(config.getInt("otel.blrp.max.queue.size", 2048)));
                        return new CountingExporter(exporter, slots.get());
                    })
                    .disableShutdownHook()
                    .build()
                    .getOpenTelemetrySdk();
            this.sdkSlots = Objects.requireNonNull(slots.get(), "the OTLP log exporter was not configured");
            this.logger = sdk.getSdkLoggerProvider().get(SCOPE);
        } else {
            this.sdk = null;
            this.logger = null;
            this.sdkSlots = null;
        }
        this.thread = new Thread(this::run, THREAD_NAME);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Starts the export the settings and the environment ask for, or returns null when they ask for
     * none (no {@code audit.stdout} and no OTLP endpoint).
     *
     * @param settings the policy's {@code audit} section ({@code format}, {@code stdout})
     * @param otelConfig OpenTelemetry settings as {@code otel.*} property names that override the
     *                   environment's (tests pass an endpoint here); empty for the environment alone
     * @param stdout where the standard-output copy goes ({@code System.out} in production)
     */
    public static AuditExport start(AuditSettings settings, Map<String, String> otelConfig, OutputStream stdout) {
        return start(settings, otelConfig, stdout, () -> null);
    }

    /**
     * As {@link #start(AuditSettings, Map, OutputStream)}, with the running policy's {@code red_flags}
     * (null when there are none), read as each record is exported: the matched rules' strongest action
     * ({@link #RED_FLAG_ACTION}) comes from it, as an alert's rules do ({@code AlertingAuditSink}).
     */
    public static AuditExport start(AuditSettings settings, Map<String, String> otelConfig, OutputStream stdout,
                                    Supplier<RedFlagSettings> redFlags) {
        Objects.requireNonNull(settings, "settings");
        Objects.requireNonNull(otelConfig, "otelConfig");
        boolean otlp = otlpEnabled(otelConfig, System.getenv());
        if (!otlp && !settings.stdout()) {
            return null;
        }
        AuditExport export = new AuditExport(settings.format(), settings.stdout() ? stdout : null,
                otlp ? otelConfig : null, redFlags);
        log.info("audit export: stdout={} otlp={} format={}", settings.stdout(), otlp ? endpoint(otelConfig) : "off",
                settings.format().label());
        return export;
    }

    /**
     * Returns whether OTLP export is asked for: an OTLP endpoint (all signals or logs only) is set in
     * {@code overrides}, the system properties or {@code env}, and neither {@code OTEL_SDK_DISABLED=true}
     * nor {@code OTEL_LOGS_EXPORTER=none} says otherwise.
     */
    static boolean otlpEnabled(Map<String, String> overrides, Map<String, String> env) {
        if ("true".equalsIgnoreCase(setting("otel.sdk.disabled", overrides, env))
                || "none".equalsIgnoreCase(setting("otel.logs.exporter", overrides, env))) {
            return false;
        }
        return setting("otel.exporter.otlp.endpoint", overrides, env) != null
                || setting("otel.exporter.otlp.logs.endpoint", overrides, env) != null;
    }

    private static String endpoint(Map<String, String> overrides) {
        String logs = setting("otel.exporter.otlp.logs.endpoint", overrides, System.getenv());
        return logs != null ? logs : setting("otel.exporter.otlp.endpoint", overrides, System.getenv()) + "/v1/logs";
    }

    /** An {@code otel.*} setting from the overrides, else the system property, else its environment variable. */
    private static String setting(String property, Map<String, String> overrides, Map<String, String> env) {
        String value = overrides.get(property);
        if (value == null) {
            value = System.getProperty(property);
        }
        if (value == null) {
            value = env.get(property.toUpperCase(Locale.ROOT).replace('.', '_'));
        }
        return value == null || value.isBlank() ? null : value;
    }

    /** Offers the record to the export queue; never blocks. A full queue drops it from the export (counted). */
    @Override
    public void write(AuditRecord record) {
        if (closing || !queue.offer(record)) {
            failed(Failure.QUEUE_FULL, 1, null);
        }
    }

    /** Returns how many records did not leave for {@code failure}'s reason. */
    public long failures(Failure failure) {
        return failures.get(failure).get();
    }

    /** Returns how many records the OTLP exporter delivered. */
    public long exportedOtlp() {
        return exportedOtlp.get();
    }

    /** Returns how many records were written to standard output. */
    public long writtenStdout() {
        return writtenStdout.get();
    }

    /** Returns how many records wait in the queue (approximate). */
    public int queued() {
        return queue.size();
    }

    private void run() {
        List<AuditRecord> batch = new ArrayList<>(512);
        while (true) {
            AuditRecord first;
            try {
                first = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (first == null) {
                if (closing) {
                    return;
                }
                continue;
            }
            batch.add(first);
            queue.drainTo(batch, 511);
            if (stdout != null) {
                writeStdout(batch);
            }
            if (logger != null) {
                for (AuditRecord r : batch) {
                    if (!awaitSlot()) {
                        failed(Failure.EXPORT_FAILED, 1, null);
                        continue;
                    }
                    emit(r);
                }
            }
            batch.clear();
        }
    }

    private boolean awaitSlot() {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_TIMEOUT_MILLIS);
        try {
            while (!sdkSlots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                if (closing && System.nanoTime() > deadline) {
                    return false;
                }
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void writeStdout(List<AuditRecord> batch) {
        StringBuilder lines = new StringBuilder(batch.size() * 400);
        for (AuditRecord r : batch) {
            lines.append(body(r, redFlagAction(r))).append('\n');
        }
        try {
            stdout.write(lines.toString().getBytes(StandardCharsets.UTF_8));
            stdout.flush();
            writtenStdout.addAndGet(batch.size());
        } catch (IOException e) {
            failed(Failure.STDOUT_FAILED, batch.size(), e);
        }
    }

    private String body(AuditRecord r, String redFlagAction) {
        return format == AuditSettings.Format.OCSF ? OcsfMapper.toJson(r, redFlagAction) : r.toJson();
    }

    private String redFlagAction(AuditRecord r) {
        RedFlagSettings settings;
        try {
            settings = redFlags.get();
        } catch (RuntimeException e) {
            settings = null;
        }
        return redFlagAction(r, settings);
    }

    /**
     * The strongest action of the red-flag rules that matched in {@code r}: {@code block} when the record
     * shows a block acted (reason {@code red_flag}, or a response stream closed for one), else the
     * strongest action {@code settings} gives the matched ids; null when nothing matched or it is unknown.
     */
    static String redFlagAction(AuditRecord r, RedFlagSettings settings) {
        if (r.redFlags() == null) {
            return null;
        }
        if ("red_flag".equals(r.reason()) || (r.error() != null && r.error().startsWith("red_flag:"))) {
            return "block";
        }
        RedFlagAction strongest = settings == null ? null : settings.strongest(r.redFlags().keySet());
        return strongest == null ? null : strongest.name().toLowerCase(Locale.ROOT);
    }

    private void emit(AuditRecord r) {
        boolean denied = "deny".equals(r.decision());
        boolean wouldDeny = "would_deny".equals(r.decision());
        String action = redFlagAction(r);
        LogRecordBuilder b = logger.logRecordBuilder()
                .setEventName(EVENT_NAME)
                .setTimestamp(r.time())
                .setSeverity(denied || wouldDeny ? Severity.WARN : Severity.INFO)
                .setSeverityText(denied || wouldDeny ? "WARN" : "INFO")
                .setBody(body(r, action))
                .setAllAttributes(attributes(r, action));
        b.emit();
    }

    /** {@link #attributes(AuditRecord, String)} with the red-flag action the record alone shows. */
    static Attributes attributes(AuditRecord r) {
        return attributes(r, redFlagAction(r, null));
    }

    /**
     * The record's fields as log-record attributes, under their audit names (OpenTelemetry semantic
     * conventions where one exists); the LLM fields under the GenAI names ({@code gen_ai.*}), red flags
     * and capture under {@code sluice.*}.
     *
     * @param redFlagAction the matched red-flag rules' strongest action, or null
     */
    static Attributes attributes(AuditRecord r, String redFlagAction) {
        AttributesBuilder a = Attributes.builder();
        a.put(AuditFields.EVENT_ID, r.eventId());
        put(a, AuditFields.EXTENSION, r.extension());
        put(a, AuditFields.CLIENT_ADDRESS, r.clientAddress());
        put(a, AuditFields.CLIENT_PORT, r.clientPort());
        put(a, AuditFields.LISTENER, r.listener());
        put(a, AuditFields.HTTP_REQUEST_METHOD, r.method());
        put(a, AuditFields.URL_SCHEME, r.urlScheme());
        put(a, AuditFields.SERVER_ADDRESS, r.serverAddress());
        put(a, AuditFields.SERVER_PORT, r.serverPort());
        put(a, AuditFields.URL_PATH, r.urlPath());
        put(a, AuditFields.TLS_MODE, r.tlsMode());
        put(a, AuditFields.TLS_SNI, r.tlsSni());
        put(a, AuditFields.DECISION, r.decision());
        put(a, AuditFields.OUTCOME, r.outcome());
        put(a, AuditFields.REASON, r.reason());
        put(a, AuditFields.RULE, r.rule());
        put(a, AuditFields.NETWORK_PEER_ADDRESS, r.peerAddress());
        put(a, AuditFields.HTTP_RESPONSE_STATUS_CODE, r.statusCode());
        a.put(AuditFields.BYTES_SENT, r.bytesSent());
        a.put(AuditFields.BYTES_RECEIVED, r.bytesReceived());
        a.put(AuditFields.DURATION_MS, r.durationMs());
        if (r.redactions() != null) {
            r.redactions().forEach((detector, count) -> a.put(AuditFields.REDACTIONS + "." + detector, count));
        }
        put(a, AuditFields.PIN, r.pin());
        put(a, AuditFields.APPROVAL, r.approval());
        put(a, AuditFields.APPROVAL_BY, r.approvalBy());
        put(a, AuditFields.APPROVAL_SCOPE, r.approvalScope());
        put(a, AuditFields.ERROR, r.error());
        put(a, AuditFields.ADDRESS_CLASS, r.addressClass());
        put(a, GEN_AI_RESPONSE_MODEL, r.llmModel());
        if (r.llmInputTokens() != null) {
            a.put(GEN_AI_INPUT_TOKENS, r.llmInputTokens());
        }
        if (r.llmOutputTokens() != null) {
            a.put(GEN_AI_OUTPUT_TOKENS, r.llmOutputTokens());
        }
        if (r.redFlags() != null) {
            a.put(AttributeKey.stringArrayKey(RED_FLAG_RULES), List.copyOf(r.redFlags().keySet()));
            r.redFlags().forEach((rule, count) -> a.put(RED_FLAG_COUNT_PREFIX + rule, count));
            put(a, RED_FLAG_ACTION, redFlagAction);
        }
        if (Boolean.TRUE.equals(r.capture())) {
            a.put(CAPTURE, true);
        }
        return a.build();
    }

    private static void put(AttributesBuilder a, String key, String value) {
        if (value != null) {
            a.put(key, value);
        }
    }

    private static void put(AttributesBuilder a, String key, Integer value) {
        if (value != null) {
            a.put(key, (long) value);
        }
    }

    private void failed(Failure failure, long records, Throwable cause) {
        failures.get(failure).addAndGet(records);
        long now = System.nanoTime();
        long suppressed;
        synchronized (logLock) {
            unloggedFailures += records;
            if (lastLogNanos != 0 && now - lastLogNanos < LOG_INTERVAL_NANOS) {
                return;
            }
            lastLogNanos = now;
            suppressed = unloggedFailures;
            unloggedFailures = 0;
        }
        log.warn("audit export: {} record(s) not exported since the last report (latest: {}{}); the audit file "
                        + "keeps them", suppressed, failure.label(),
                cause == null ? "" : ": " + (cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage()));
    }

    /**
     * Stops taking records, exports what is queued (up to {@value #CLOSE_TIMEOUT_MILLIS} ms), then flushes
     * and shuts the SDK down. Idempotent.
     */
    @Override
    public void close() {
        if (closing) {
            return;
        }
        closing = true;
        try {
            thread.join(CLOSE_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        thread.interrupt();
        int left = queue.size();
        if (left > 0) {
            queue.clear();
            failed(Failure.QUEUE_FULL, left, null);
        }
        if (sdk != null) {
            sdk.getSdkLoggerProvider().forceFlush().join(CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            sdk.shutdown().join(CLOSE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        }
    }

    /** Counts what the OTLP exporter delivered and what it could not, and frees the SDK queue slots. */
    private final class CountingExporter implements LogRecordExporter {
        private final LogRecordExporter delegate;
        private final Semaphore slots;

        CountingExporter(LogRecordExporter delegate, Semaphore slots) {
            this.delegate = delegate;
            this.slots = slots;
        }

        @Override
        public CompletableResultCode export(Collection<LogRecordData> logs) {
            int n = logs.size();
            CompletableResultCode result;
            try {
                result = delegate.export(logs);
            } catch (RuntimeException e) {
                slots.release(n);
                failed(Failure.EXPORT_FAILED, n, e);
                return CompletableResultCode.ofFailure();
            }
            result.whenComplete(() -> {
                slots.release(n);
                if (result.isSuccess()) {
                    exportedOtlp.addAndGet(n);
                } else {
                    failed(Failure.EXPORT_FAILED, n, result.getFailureThrowable());
                }
            });
            return result;
        }

        @Override
        public CompletableResultCode flush() {
            return delegate.flush();
        }

        @Override
        public CompletableResultCode shutdown() {
            return delegate.shutdown();
        }

        @Override
        public String toString() {
            return "CountingExporter{" + delegate + "}";
        }
    }
}
