package dev.sluice.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs a closed-loop load: {@code workers} threads, each repeating one request as fast as it completes,
 * for a warm-up period (not counted) and then a measured period. Latencies of the measured period are
 * kept in per-worker arrays (nanoseconds) and sorted at the end: no histogram library, exact quantiles.
 */
final class LoadRunner {

    /** One worker's repeated unit of work; {@link #once} does one request and may keep state between calls. */
    interface Worker extends AutoCloseable {
        /** Does one request and returns when its whole response has been read. */
        void once() throws Exception;

        /** Drops whatever the worker keeps open (after an error, and at the end). */
        @Override
        void close();
    }

    /**
     * The result of one run: measured requests, every request completed (warm-up included), errors,
     * measured seconds, and latency quantiles in milliseconds.
     */
    record Result(long requests, long allRequests, long errors, double seconds, double p50Millis, double p99Millis,
                  double maxMillis, String firstError) {

        /** Requests completed per second in the measured period. */
        double requestsPerSecond() {
            return requests / seconds;
        }

        /** One JSON object on one line, the shape the harness reads. */
        String toJson() {
            return String.format(Locale.ROOT,
                    "{\"requests\":%d,\"all_requests\":%d,\"errors\":%d,\"seconds\":%.3f,\"rps\":%.1f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
                            + "\"max_ms\":%.3f,\"first_error\":%s}",
                    requests, allRequests, errors, seconds, requestsPerSecond(), p50Millis, p99Millis, maxMillis,
                    firstError == null ? "null" : "\"" + firstError.replace("\\", "\\\\").replace("\"", "'")
                            .replace("\n", " ").replace("\r", " ") + "\"");
        }
    }

    private LoadRunner() {
    }

    /**
     * Runs {@code workers} copies of the worker made by {@code factory} for {@code warmupSeconds} +
     * {@code seconds}; only requests that complete in the second period are counted.
     */
    static Result run(java.util.function.Supplier<Worker> factory, int workers, double warmupSeconds, double seconds)
            throws InterruptedException {
        long start = System.nanoTime();
        long measureFrom = start + (long) (warmupSeconds * 1e9);
        long end = measureFrom + (long) (seconds * 1e9);
        AtomicLong errors = new AtomicLong();
        AtomicLong completed = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        List<long[]> latencies = new ArrayList<>();
        int[] counts = new int[workers];
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            long[][] mine = {new long[4096]};
            int index = w;
            latencies.add(null);
            Thread thread = new Thread(() -> {
                Worker worker = factory.get();
                int n = 0;
                try {
                    while (true) {
                        long t0 = System.nanoTime();
                        if (t0 >= end) {
                            break;
                        }
                        try {
                            worker.once();
                        } catch (Exception e) {
                            worker.close();
                            if (System.nanoTime() < end) {
                                errors.incrementAndGet();
                                firstError.compareAndSet(null, e.toString());
                                sleepQuietly(10);
                            }
                            continue;
                        }
                        long t1 = System.nanoTime();
                        completed.incrementAndGet();
                        if (t0 >= measureFrom && t1 <= end) {
                            if (n == mine[0].length) {
                                mine[0] = Arrays.copyOf(mine[0], n * 2);
                            }
                            mine[0][n++] = t1 - t0;
                        }
                    }
                } finally {
                    worker.close();
                    synchronized (latencies) {
                        latencies.set(index, mine[0]);
                        counts[index] = n;
                    }
                }
            }, "load-" + w);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join(Math.max(1, (end - System.nanoTime()) / 1_000_000 + 30_000));
        }
        long total = 0;
        synchronized (latencies) {
            for (int c : counts) {
                total += c;
            }
            long[] all = new long[(int) total];
            int at = 0;
            for (int w = 0; w < workers; w++) {
                if (latencies.get(w) != null) {
                    System.arraycopy(latencies.get(w), 0, all, at, counts[w]);
                    at += counts[w];
                }
            }
            Arrays.sort(all, 0, at);
            return new Result(at, completed.get(), errors.get(), seconds, quantile(all, at, 0.50), quantile(all, at, 0.99),
                    at == 0 ? Double.NaN : all[at - 1] / 1e6, firstError.get());
        }
    }

    private static double quantile(long[] sorted, int n, double q) {
        if (n == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(q * n) - 1;
        return sorted[Math.max(0, Math.min(n - 1, i))] / 1e6;
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Parses {@code --name value} pairs; a flag without a value is {@code "true"}. */
    static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("argument: " + args[i] + " (expected: --name value)");
            }
            String name = args[i].substring(2);
            if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                options.put(name, args[++i]);
            } else {
                options.put(name, "true");
            }
        }
        return options;
    }
}
