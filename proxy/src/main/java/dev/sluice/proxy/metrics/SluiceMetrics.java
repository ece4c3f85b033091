package dev.sluice.proxy.metrics;

import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Verdict;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.Rule;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.netty4.NettyAllocatorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.buffer.PooledByteBufAllocator;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToDoubleFunction;

/**
 * Sluice's metrics on a Micrometer Prometheus registry (design.md "Metrics"; names in
 * {@link MetricNames}). Label sets stay bounded: {@code destination} is the host pattern (or prefix)
 * of the allow rule that decided, or {@code denied}; {@code reason} and {@code decision} come from
 * fixed enums; {@code extension} from the policy (or {@code unknown}). One instance per server.
 */
public final class SluiceMetrics {

    private final PrometheusMeterRegistry registry;
    private final Map<String, AtomicInteger> active = new ConcurrentHashMap<>();
    private final Map<String, String> destinations = new ConcurrentHashMap<>();
    private final Map<String, TrafficMeter> meters = new ConcurrentHashMap<>();
    private final Map<String, Counter> requestCounters = new ConcurrentHashMap<>();
    /** Per-label-set counters other than requests, keyed by name and label values: no builder (tag sort, registry lock) per count. */
    private final Map<String, Counter> counters = new ConcurrentHashMap<>();
    private volatile String destinationsPolicy = "";
    private final Timer duration;

    public SluiceMetrics() {
        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new NettyAllocatorMetrics(PooledByteBufAllocator.DEFAULT).bindTo(registry);
        this.duration = Timer.builder(MetricNames.REQUEST_DURATION)
                .description("Duration of each audited exchange or tunnel")
                .publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
    }

    /** Returns the registry (for binders and tests). */
    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /** Returns the Prometheus text exposition of every metric (format 0.0.4). */
    public String scrape() {
        return registry.scrape();
    }

    /**
     * Returns the byte counters for traffic of {@code extension} decided by {@code decision}: the
     * destination label is the deciding allow rule's host pattern or prefix, or {@code denied}.
     */
    public TrafficMeter traffic(Policy policy, Extension extension, Decision decision) {
        String destination = destination(policy, extension, decision);
        // Looked up once per (extension, destination): registering a meter sorts tags and takes a lock.
        return meters.computeIfAbsent(extension.name() + "\u0000" + destination, key -> {
            Tags tags = Tags.of(MetricNames.EXTENSION, extension.name(), MetricNames.DESTINATION, destination);
            return new TrafficMeter(
                    Counter.builder(MetricNames.EGRESS_BYTES).baseUnit("bytes").tags(tags)
                            .description("Bytes sent toward the internet").register(registry),
                    Counter.builder(MetricNames.INGRESS_BYTES).baseUnit("bytes").tags(tags)
                            .description("Bytes received back from the internet").register(registry), null);
        });
    }

    private String destination(Policy policy, Extension extension, Decision decision) {
        if (decision.verdict() != Verdict.ALLOW) {
            return MetricNames.DENIED_DESTINATION;
        }
        if (!policy.sha256Hex().equals(destinationsPolicy)) {
            destinations.clear();
            destinationsPolicy = policy.sha256Hex();
        }
        return destinations.computeIfAbsent(decision.ruleId(), id -> {
            for (Rule rule : extension.allow()) {
                if (rule.id().equals(id)) {
                    return rule.host() != null ? rule.host() : String.valueOf(rule.cidr());
                }
            }
            return MetricNames.DENIED_DESTINATION;
        });
    }

    /** Counts one audited request or tunnel and its duration. */
    public void recordRequest(AuditRecord record) {
        String extension = record.extension() == null ? MetricNames.UNKNOWN_EXTENSION : record.extension();
        String decision = record.decision() == null ? "deny" : record.decision();
        String reason = record.reason() == null ? "none" : record.reason();
        requestCounters.computeIfAbsent(extension + "\u0000" + decision + "\u0000" + reason, key ->
                Counter.builder(MetricNames.REQUESTS)
                        .tags(MetricNames.EXTENSION, extension, MetricNames.DECISION, decision, MetricNames.REASON, reason)
                        .description("Audited requests and tunnels")
                        .register(registry)).increment();
        duration.record(Duration.ofMillis(record.durationMs()));
        if (record.redactions() != null) {
            record.redactions().forEach((detector, count) -> counter(MetricNames.REDACTIONS, null,
                    MetricNames.EXTENSION, extension, MetricNames.DETECTOR, detector).increment(count));
        }
        if (record.credentials() != null) {
            for (String credential : record.credentials()) {
                counter(MetricNames.CREDENTIAL_INJECTIONS, "Requests Sluice injected a credential into",
                        MetricNames.EXTENSION, extension, MetricNames.CREDENTIAL, credential).increment();
            }
        }
    }

    /**
     * Counts the LLM tokens one response reported ({@code sluice_llm_tokens_total}); counts {@code >= 0},
     * a zero adds nothing but still registers the series.
     *
     * @param host the inspected host the response came from (policy-listed: bounded)
     */
    public void llmTokens(String extension, String host, long inputTokens, long outputTokens) {
        String ext = extension == null ? MetricNames.UNKNOWN_EXTENSION : extension;
        counter(MetricNames.LLM_TOKENS, "LLM tokens the providers reported", MetricNames.EXTENSION, ext,
                MetricNames.HOST, host, MetricNames.KIND, "input").increment(inputTokens);
        counter(MetricNames.LLM_TOKENS, "LLM tokens the providers reported", MetricNames.EXTENSION, ext,
                MetricNames.HOST, host, MetricNames.KIND, "output").increment(outputTokens);
    }

    /** Counts one red-flag match of {@code rule} (a policy rule id: bounded) for {@code extension}. */
    public void redFlag(String extension, String rule) {
        String ext = extension == null ? MetricNames.UNKNOWN_EXTENSION : extension;
        counter(MetricNames.RED_FLAGS, "Red-flag matches in bodies to and from inspected hosts",
                MetricNames.EXTENSION, ext, MetricNames.RULE, rule).increment();
    }

    /** Counts a pin mismatch for {@code host} (a policy-listed inspect host: bounded). */
    public void pinFailure(String host) {
        counter(MetricNames.PIN_FAILURES, null, MetricNames.HOST, host).increment();
    }

    /**
     * Counts a successful client-facing TLS handshake of an intercepted tunnel: {@code resumed} true for an
     * abbreviated (resumed) handshake, false for a full one, null when the TLS provider does not tell.
     */
    public void downstreamHandshake(Boolean resumed) {
        counter(MetricNames.TLS_DOWNSTREAM_HANDSHAKES, "Client-facing TLS handshakes of intercepted tunnels",
                MetricNames.RESULT, resumed == null ? "unknown" : resumed ? "resumed" : "full").increment();
    }

    /**
     * Returns the counter {@code name} with the label pairs {@code keyValues} (name, value, name, value...),
     * registered on first use and cached after it; {@code description} may be null.
     */
    private Counter counter(String name, String description, String... keyValues) {
        StringBuilder key = new StringBuilder(name);
        for (String part : keyValues) {
            key.append('\u0000').append(part);
        }
        return counters.computeIfAbsent(key.toString(), k -> {
            Counter.Builder b = Counter.builder(name).tags(keyValues);
            if (description != null) {
                b.description(description);
            }
            return b.register(registry);
        });
    }

    /** Returns the live gauge value holder for connections of {@code extension} on {@code listener}. */
    public AtomicInteger activeConnections(String extension, String listener) {
        return active.computeIfAbsent(extension + "\u0000" + listener, key -> {
            AtomicInteger value = new AtomicInteger();
            Gauge.builder(MetricNames.ACTIVE_CONNECTIONS, value, AtomicInteger::get)
                    .tags(MetricNames.EXTENSION, extension, MetricNames.LISTENER, listener)
                    .description("Downstream connections bound to an extension")
                    .register(registry);
            return value;
        });
    }

    /** Exposes a monotonic count kept elsewhere (reload results, audit write failures) as a counter. */
    public <T> void functionCounter(String name, Tags tags, T source, ToDoubleFunction<T> count) {
        FunctionCounter.builder(name, source, count).tags(tags).register(registry);
    }
}
