package dev.sluice.proxy.alerts;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends alerts to {@code alerts.webhook}: {@link #offer} never blocks (a full queue drops the alert and
 * counts it); one daemon thread takes up to {@value #MAX_BATCH} alerts at a time and POSTs them as
 * {@code {"alerts": [...]}} ({@code application/json}) to each alert's URL. A POST without a 2xx answer
 * within {@link #TIMEOUT} is retried after 250 ms and 500 ms; a batch that fails all
 * {@value #ATTEMPTS} attempts is dropped and counted in {@link #failures()}.
 */
public final class AlertWebhook implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(AlertWebhook.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Alerts that may wait. */
    public static final int CAPACITY = 1024;
    /** Most alerts in one POST. */
    public static final int MAX_BATCH = 100;
    /** Attempts per batch. */
    public static final int ATTEMPTS = 3;
    /** Time allowed for one POST. */
    public static final Duration TIMEOUT = Duration.ofSeconds(5);

    /** One alert and where it goes. */
    public record Alert(URI webhook, Map<String, Object> body) {
    }

    private final BlockingQueue<Alert> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failures = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(TIMEOUT)
            .proxy(java.net.ProxySelector.of(null)).build();
    private final Thread sender;
    private volatile boolean closed;

    public AlertWebhook() {
        sender = new Thread(this::run, "sluice-alerts");
        sender.setDaemon(true);
        sender.start();
    }

    /** Queues {@code alert}; returns false (and counts it dropped) when the queue is full or closed. */
    public boolean offer(Alert alert) {
        if (closed || !queue.offer(alert)) {
            dropped.incrementAndGet();
            return false;
        }
        return true;
    }

    /** Alerts a webhook accepted (2xx). */
    public long sent() {
        return sent.get();
    }

    /** Batches that failed every attempt. */
    public long failures() {
        return failures.get();
    }

    /** Alerts dropped because the queue was full. */
    public long dropped() {
        return dropped.get();
    }

    private void run() {
        List<Alert> batch = new ArrayList<>();
        while (!closed) {
            try {
                Alert first = queue.poll(500, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.clear();
                batch.add(first);
                queue.drainTo(batch, MAX_BATCH - 1);
                Map<URI, List<Map<String, Object>>> byUrl = new LinkedHashMap<>();
                for (Alert a : batch) {
                    byUrl.computeIfAbsent(a.webhook(), u -> new ArrayList<>()).add(a.body());
                }
                byUrl.forEach(this::deliver);
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("alert webhook: {}", e.toString());
            }
        }
    }

    private void deliver(URI url, List<Map<String, Object>> alerts) {
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(Map.of("alerts", alerts));
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            failures.incrementAndGet();
            return;
        }
        long backoff = 250;
        for (int attempt = 1; attempt <= ATTEMPTS && !closed; attempt++) {
            try {
                HttpResponse<Void> response = client.send(HttpRequest.newBuilder(url).timeout(TIMEOUT)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(), HttpResponse.BodyHandlers.discarding());
                if (response.statusCode() / 100 == 2) {
                    sent.addAndGet(alerts.size());
                    return;
                }
                log.debug("alert webhook {} answered {}", url.getHost(), response.statusCode());
            } catch (java.io.IOException e) {
                log.debug("alert webhook {} failed: {}", url.getHost(), e.toString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (attempt < ATTEMPTS) {
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                backoff *= 2;
            }
        }
        failures.incrementAndGet();
        log.warn("alert webhook {}: {} alert(s) dropped after {} attempts", url.getHost(), alerts.size(), ATTEMPTS);
    }

    /** Stops the sender; alerts still queued are not sent. */
    @Override
    public void close() {
        closed = true;
        sender.interrupt();
    }
}
