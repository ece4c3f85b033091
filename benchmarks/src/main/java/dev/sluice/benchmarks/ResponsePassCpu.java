package dev.sluice.benchmarks;

import dev.sluice.rules.llm.UsageScanner;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import dev.sluice.rules.redflag.BuiltinRedFlags;
import dev.sluice.rules.redflag.RedFlagAction;
import dev.sluice.rules.redflag.RedFlagDirection;
import dev.sluice.rules.redflag.RedFlagFold;
import dev.sluice.rules.redflag.RedFlagRule;
import dev.sluice.rules.redflag.RedFlagScan;
import dev.sluice.rules.redflag.RedFlagSettings;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * MiB of response per CPU-second of the scanning thread ({@link ThreadMXBean}): the readers of an
 * intercepted SSE response to a host with {@code redact: true} and the five built-in red flags, before
 * and after they became one, interleaved in one JVM so that load from other processes moves both alike.
 *
 * <ul>
 *   <li>{@code separate} (main before 2026-12-04): the raw bytes through a JSON-mode report redactor (the
 *       credential scan), a {@link UsageScanner} for usage, and a second {@link UsageScanner} whose text values go to
 *       a {@link RedFlagScan} (joined without a separator), flushed at each chunk;</li>
 *   <li>{@code oneRead} (the proxy's {@code intercept.ResponseRead}, its logic repeated here): one
 *       {@link UsageScanner}; the text values, joined, through one plain-text report redactor carrying the
 *       red flags as tap keywords ({@link RedFlagFold#textBody}, {@link StreamingRedactor#settleTap} at each
 *       chunk), the other string values as {@code "name": "value"} lines through a second plain-text redactor.</li>
 * </ul>
 * The response: about 1 MiB of Anthropic {@code content_block_delta} events, each a delta of 3 to 24
 * characters of the prompt text of {@link RedactionBenchmark}, fed in chunks of
 * {@value RedactionBenchmark#CHUNK_BYTES} bytes (and of 1 KiB, as a dribbling stream). Prints one line per
 * case with the median and range over the measured rounds, and the ratio round by round.
 *
 * <p>Run: {@code java --add-modules=jdk.incubator.vector -cp benchmarks/target/benchmarks.jar
 * dev.sluice.benchmarks.ResponsePassCpu [rounds]}.
 */
public final class ResponsePassCpu {

    private static final Set<String> TEXT_FIELDS = Set.of("text", "content", "delta", "arguments", "partial_json",
            "thinking", "refusal");

    private ResponsePassCpu() {
    }

    /** An SSE stream of about {@code size} bytes whose deltas are pieces of {@code text}. */
    static byte[] stream(String text, int size, long seed) {
        Random random = new Random(seed);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\","
                + "\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":1200,\"output_tokens\":1}}}\n\n")
                .getBytes(StandardCharsets.UTF_8));
        int at = 0;
        while (out.size() < size) {
            int n = 3 + random.nextInt(22);
            if (at + n > text.length()) {
                at = 0;
            }
            String piece = text.substring(at, at + n).replace("\\", "\\\\").replace("\"", "\\\"")
                    .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
            StringBuilder clean = new StringBuilder();
            for (char c : piece.toCharArray()) {
                clean.append(c < 0x20 ? ' ' : c);
            }
            at += n;
            out.writeBytes(("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                    + "\"delta\":{\"type\":\"text_delta\",\"text\":\"" + clean + "\"}}\n\n").getBytes(StandardCharsets.UTF_8));
        }
        out.writeBytes(("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
                + "\"usage\":{\"output_tokens\":4000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
                .getBytes(StandardCharsets.UTF_8));
        return out.toByteArray();
    }

    /** Entry point. */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 30;
        int warm = 10;
        int passes = 6;
        DetectorSet detectors = DetectorSet.builtins();
        // the prompt's text, decoded: what a model might write back
        String prompt = new String(RedactionBenchmark.Prompt.body(RedactionBenchmark.BODY_BYTES, 0, 1), StandardCharsets.UTF_8);
        StringBuilder text = new StringBuilder();
        UsageScanner.of(UsageScanner.Framing.JSON).onStrings((f, v) -> text.append(v).append(' '))
                .feed(prompt.getBytes(StandardCharsets.UTF_8), 0, prompt.length());
        byte[] body = stream(text.toString(), RedactionBenchmark.BODY_BYTES, 7);
        List<RedFlagRule> rules = BuiltinRedFlags.IDS.stream().map(id -> new RedFlagRule(
                BuiltinRedFlags.byId(id, List.of()).orElseThrow(), RedFlagAction.LOG, RedFlagDirection.BOTH)).toList();
        RedFlagSettings settings = new RedFlagSettings(rules, List.of());
        RedFlagFold fold = RedFlagFold.of(settings);
        DetectorSet tapped = detectors.withTap(fold.keywords());
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        int[] chunks = {RedactionBenchmark.CHUNK_BYTES, 1024};
        String[] names = {"separate 64KiB", "oneRead 64KiB", "separate 1KiB", "oneRead 1KiB"};
        double[][] rate = new double[names.length][rounds];
        long sink = 0;
        for (int round = 0; round < warm + rounds; round++) {
            for (int c = 0; c < names.length; c++) {
                int chunk = chunks[c / 2];
                boolean one = c % 2 == 1;
                long t0 = mx.getCurrentThreadCpuTime();
                for (int p = 0; p < passes; p++) {
                    sink += one ? oneRead(body, chunk, detectors, tapped, fold, rules)
                            : separate(body, chunk, detectors, rules);
                }
                long t1 = mx.getCurrentThreadCpuTime();
                if (round >= warm) {
                    rate[c][round - warm] = passes * (body.length / 1048576.0) / ((t1 - t0) / 1e9);
                }
            }
        }
        System.out.printf("response: %d bytes of SSE, %s%n", body.length, "5 built-in red flags, built-in detectors");
        for (int c = 0; c < names.length; c++) {
            double[] r = rate[c].clone();
            java.util.Arrays.sort(r);
            System.out.printf("%-18s median %7.1f MiB/CPU-s  (min %.1f, max %.1f)%n", names[c], r[r.length / 2], r[0],
                    r[r.length - 1]);
        }
        for (int k = 0; k < 2; k++) {
            double[] ratio = new double[rounds];
            for (int i = 0; i < rounds; i++) {
                ratio[i] = rate[2 * k + 1][i] / rate[2 * k][i];
            }
            java.util.Arrays.sort(ratio);
            System.out.printf("ratio oneRead/separate %s (same round) median %.3f  (min %.3f, max %.3f)%n",
                    k == 0 ? "64KiB" : "1KiB ", ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
        }
        System.out.println("(sink " + sink + ")");
    }

    /** Main's three readers of the response. */
    static long separate(byte[] body, int chunk, DetectorSet detectors, List<RedFlagRule> rules)
            throws BodyTooLargeException {
        StreamingRedactor report = detectors.newRedactor(BodyFormat.JSON, RedactionAction.REPORT, Long.MAX_VALUE);
        UsageScanner usage = UsageScanner.of(UsageScanner.Framing.SSE);
        RedFlagScan scan = new RedFlagScan(rules, null, Set.of(), "");
        long[] flagged = new long[1];
        UsageScanner flagsReader = UsageScanner.of(UsageScanner.Framing.SSE).onStrings((field, value) -> {
            if (field != null && TEXT_FIELDS.contains(field)) {
                flagged[0] += scan.feed(value).size();
            }
        });
        for (int off = 0; off < body.length; off += chunk) {
            int n = Math.min(chunk, body.length - off);
            report.feed(body, off, n);
            usage.feed(body, off, n);
            flagsReader.feed(body, off, n);
            flagged[0] += scan.flush().size();
        }
        report.finish();
        usage.finish();
        flagsReader.finish();
        flagged[0] += scan.flush().size();
        return report.findings().size() + usage.outputTokens() + flagged[0];
    }

    /** The one reader ({@code intercept.ResponseRead}). */
    static long oneRead(byte[] body, int chunk, DetectorSet detectors, DetectorSet tapped, RedFlagFold fold,
                        List<RedFlagRule> rules) throws BodyTooLargeException {
        RedFlagFold.Body flags = fold.textBody(rules, Set.of());
        StreamingRedactor text = tapped.newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE, flags);
        StreamingRedactor others = detectors.newRedactor(BodyFormat.PLAIN, RedactionAction.REPORT, Long.MAX_VALUE);
        Gathered textBytes = new Gathered();
        Gathered otherBytes = new Gathered();
        UsageScanner reader = UsageScanner.of(UsageScanner.Framing.SSE).onStrings((field, value) -> {
            if (field != null && TEXT_FIELDS.contains(field)) {
                textBytes.add(value);
            } else {
                if (field != null) {
                    otherBytes.add("\"");
                    otherBytes.add(field);
                    otherBytes.add("\": ");
                }
                otherBytes.add("\"");
                otherBytes.add(value);
                otherBytes.add("\"\n");
            }
        });
        long flagged = 0;
        for (int off = 0; off < body.length; off += chunk) {
            reader.feed(body, off, Math.min(chunk, body.length - off));
            textBytes.feedTo(text);
            otherBytes.feedTo(others);
            text.settleTap();
            flagged += flags.drain().size();
        }
        reader.finish();
        textBytes.feedTo(text);
        otherBytes.feedTo(others);
        text.finish();
        others.finish();
        flagged += flags.drain().size();
        return text.findings().size() + others.findings().size() + reader.outputTokens() + flagged;
    }

    /** Decoded text gathered within one chunk, UTF-8 (as {@code ResponseRead} gathers it). */
    private static final class Gathered {
        byte[] bytes = new byte[1024];
        int length;

        void add(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            if (length + b.length > bytes.length) {
                bytes = java.util.Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + b.length));
            }
            System.arraycopy(b, 0, bytes, length, b.length);
            length += b.length;
        }

        void feedTo(StreamingRedactor r) throws BodyTooLargeException {
            if (length > 0) {
                r.feed(bytes, 0, length);
                length = 0;
            }
        }
    }
}
