package dev.sluice.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.rules.redact.BodyFormat;
import dev.sluice.rules.redact.BodyTooLargeException;
import dev.sluice.rules.redact.Detector;
import dev.sluice.rules.redact.DetectorSet;
import dev.sluice.rules.redact.GithubChecksum;
import dev.sluice.rules.redact.KeywordPrefilter;
import dev.sluice.rules.redact.RedactionAction;
import dev.sluice.rules.redact.StreamingRedactor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Redaction throughput on a 1 MiB (2^20 bytes) realistic prompt: a JSON chat request whose tool results
 * hold source code, shell output and prose. One operation scans the whole body, so <b>ops/s = MiB/s</b>
 * on one core ({@code -t 1}).
 *
 * <ul>
 *   <li>{@code redactClean}: {@link StreamingRedactor} in JSON mode, action redact, 64 KiB chunks, on
 *       the body with no credential;</li>
 *   <li>{@code redactWithCredentials}: the same with one credential per 10 KiB (about 100, of 11
 *       formats);</li>
 *   <li>{@code redactCleanPlain}: plain mode on the clean body;</li>
 *   <li>{@code prefilterOnly}: the keyword automaton alone over the clean body;</li>
 *   <li>{@code naiveClean}, {@code naiveWithCredentials}: the baseline — every detector's regex
 *       ({@code find()} loop) over the whole body, no prefilter, no decoding.</li>
 * </ul>
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar RedactionBenchmark -f 1 -wi 2 -i 3 -w 2s -r 2s -t 1}
 * (the forks get {@code --add-modules jdk.incubator.vector}, as {@code ./sluice} does, for the vector
 * keyword scan; add {@code -jvmArgsAppend -Dsluice.redact.scalar=true} to measure the scalar scan).
 * Heap growth while streaming 100 MB, and the same cases measured in MiB per CPU-second of the
 * measuring thread (less sensitive than wall-clock JMH figures to other processes on a shared machine):
 * {@code java --add-modules jdk.incubator.vector -cp benchmarks/target/benchmarks.jar dev.sluice.benchmarks.RedactionBenchmark}.
 */
@State(Scope.Thread)
@Fork(jvmArgsAppend = "--add-modules=jdk.incubator.vector")
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RedactionBenchmark {

    static final int BODY_BYTES = 1 << 20;
    static final int CHUNK_BYTES = 64 * 1024;

    private DetectorSet detectors;
    private byte[] clean;
    private byte[] dirty;
    private String cleanText;
    private String dirtyText;
    private Matcher[] naiveClean;
    private Matcher[] naiveDirty;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        detectors = DetectorSet.builtins();
        clean = Prompt.body(BODY_BYTES, 0, 1);
        dirty = Prompt.body(BODY_BYTES, 10 * 1024, 1);
        cleanText = new String(clean, StandardCharsets.ISO_8859_1);
        dirtyText = new String(dirty, StandardCharsets.ISO_8859_1);
        naiveClean = matchers(cleanText);
        naiveDirty = matchers(dirtyText);
        long found = redact(dirty, BodyFormat.JSON).values().stream().mapToLong(Long::longValue).sum();
        if (found < 90 || !redact(clean, BodyFormat.JSON).isEmpty()) {
            throw new IllegalStateException("benchmark bodies are not what they should be: " + found);
        }
    }

    private Matcher[] matchers(String text) {
        List<Detector> ds = detectors.detectors();
        Matcher[] ms = new Matcher[ds.size()];
        for (int i = 0; i < ms.length; i++) {
            ms[i] = ds.get(i).pattern().matcher(text);
        }
        return ms;
    }

    private Map<String, Long> redact(byte[] body, BodyFormat format) throws BodyTooLargeException {
        StreamingRedactor r = detectors.newRedactor(format, RedactionAction.REDACT, Long.MAX_VALUE);
        for (int off = 0; off < body.length; off += CHUNK_BYTES) {
            r.feed(body, off, Math.min(CHUNK_BYTES, body.length - off));
        }
        r.finish();
        return r.findings();
    }

    private static long stream(DetectorSet set, byte[] body, BodyFormat format, Blackhole bh) throws BodyTooLargeException {
        StreamingRedactor r = set.newRedactor(format, RedactionAction.REDACT, Long.MAX_VALUE);
        long out = 0;
        for (int off = 0; off < body.length; off += CHUNK_BYTES) {
            byte[] o = r.feed(body, off, Math.min(CHUNK_BYTES, body.length - off));
            out += o.length;
            bh.consume(o);
        }
        out += r.finish().length;
        bh.consume(r.findings());
        return out;
    }

    @Benchmark
    public long redactClean(Blackhole bh) throws BodyTooLargeException {
        return stream(detectors, clean, BodyFormat.JSON, bh);
    }

    @Benchmark
    public long redactWithCredentials(Blackhole bh) throws BodyTooLargeException {
        return stream(detectors, dirty, BodyFormat.JSON, bh);
    }

    @Benchmark
    public long redactCleanPlain(Blackhole bh) throws BodyTooLargeException {
        return stream(detectors, clean, BodyFormat.PLAIN, bh);
    }

    @Benchmark
    public int prefilterOnly() {
        int[] hits = {0};
        detectors.prefilter().scan(clean, 0, clean.length, clean.length, (k, end) -> hits[0]++);
        return hits[0];
    }

    @Benchmark
    public int naiveClean() {
        return naive(naiveClean);
    }

    @Benchmark
    public int naiveWithCredentials() {
        return naive(naiveDirty);
    }

    private int naive(Matcher[] ms) {
        int found = 0;
        for (int i = 0; i < ms.length; i++) {
            Detector d = detectors.detectors().get(i);
            Matcher m = ms[i];
            m.reset();
            while (m.find()) {
                if (d.accepts(m.group(d.secretGroup()))) {
                    found++;
                }
            }
        }
        return found;
    }

    /**
     * Measures heap growth while streaming 100 MB (1,600 chunks of 64 KiB, one credential per 10 KiB)
     * through one redactor: used heap after a full GC before, at every 10 MB, and at the end, with the
     * redactor alive; prints the redactor's own buffer bytes too.
     */
    public static void main(String[] args) throws Exception {
        System.out.println(DetectorSet.builtins());
        cpuThroughput();
        heapGrowth();
    }

    /** Prints MiB per CPU-second for each case (median of 5 rounds after 3 warm-up rounds). */
    static void cpuThroughput() throws Exception {
        RedactionBenchmark b = new RedactionBenchmark();
        b.setUp();
        Blackhole bh = new Blackhole("Today's password is swordfish. I understand instantiating Blackholes directly is dangerous.");
        java.lang.management.ThreadMXBean tm = java.lang.management.ManagementFactory.getThreadMXBean();
        String[] names = {"redactClean", "redactWithCredentials", "redactCleanPlain", "prefilterOnly", "naiveClean",
            "naiveWithCredentials"};
        for (int c = 0; c < names.length; c++) {
            boolean naive = names[c].startsWith("naive");
            int reps = naive ? 1 : 20;
            double[] rounds = new double[naive ? 3 : 8];
            for (int round = 0; round < rounds.length; round++) {
                long t0 = tm.getCurrentThreadCpuTime();
                for (int r = 0; r < reps; r++) {
                    switch (c) {
                        case 0 -> bh.consume(b.redactClean(bh));
                        case 1 -> bh.consume(b.redactWithCredentials(bh));
                        case 2 -> bh.consume(b.redactCleanPlain(bh));
                        case 3 -> bh.consume(b.prefilterOnly());
                        case 4 -> bh.consume(b.naiveClean());
                        default -> bh.consume(b.naiveWithCredentials());
                    }
                }
                rounds[round] = reps / ((tm.getCurrentThreadCpuTime() - t0) / 1e9);
            }
            double[] measured = java.util.Arrays.copyOfRange(rounds, naive ? 1 : 3, rounds.length);
            java.util.Arrays.sort(measured);
            System.out.printf("%-22s %8.1f MiB per CPU-second%n", names[c], measured[measured.length / 2]);
        }
    }

    static void heapGrowth() throws Exception {
        DetectorSet set = DetectorSet.builtins();
        byte[] chunk = Prompt.body(BODY_BYTES, 10 * 1024, 2);
        Runtime rt = Runtime.getRuntime();
        for (BodyFormat format : BodyFormat.values()) {
            StreamingRedactor r = set.newRedactor(format, RedactionAction.REDACT, Long.MAX_VALUE);
            System.gc();
            long before = rt.totalMemory() - rt.freeMemory();
            long maxAfterGc = before;
            long maxRetained = 0;
            long out = 0;
            long t0 = System.nanoTime();
            for (int mb = 0; mb < 100; mb++) {
                for (int off = 0; off < chunk.length; off += CHUNK_BYTES) {
                    out += r.feed(chunk, off, Math.min(CHUNK_BYTES, chunk.length - off)).length;
                    maxRetained = Math.max(maxRetained, r.retainedBytes());
                }
                if (mb % 10 == 9) {
                    System.gc();
                    maxAfterGc = Math.max(maxAfterGc, rt.totalMemory() - rt.freeMemory());
                }
            }
            out += r.finish().length;
            long t1 = System.nanoTime();
            System.gc();
            long after = rt.totalMemory() - rt.freeMemory();
            long findings = r.findings().values().stream().mapToLong(Long::longValue).sum();
            System.out.printf("%s: 100 MiB in, %d bytes out, %d findings, %.0f MiB/s (incl. GCs); heap used after GC: "
                            + "before %d KiB, max during %d KiB, after %d KiB (growth %+d KiB); redactor buffers max %d KiB%n",
                    format, out, findings, 100 / ((t1 - t0) / 1e9), before >> 10, maxAfterGc >> 10, after >> 10,
                    (maxAfterGc - before) >> 10, maxRetained >> 10);
            if (r.bytesIn() != 100L * BODY_BYTES) {
                throw new IllegalStateException();
            }
        }
    }

    /** Generates the realistic prompt. */
    static final class Prompt {
        private static final String[] CODE = {
            "def load_config(path: str) -> dict:\n    with open(path) as f:\n        return yaml.safe_load(f)\n",
            "public final class TokenBucket {\n    private final long capacity;\n    private long tokens;\n"
                    + "    public synchronized boolean tryAcquire() {\n        if (tokens > 0) { tokens--; return true; }\n"
                    + "        return false;\n    }\n}\n",
            "for (const [key, value] of Object.entries(headers)) {\n  if (key.toLowerCase() === 'authorization') continue;\n"
                    + "  out.set(key, value);\n}\n",
            "fn parse(input: &str) -> Result<Config, Error> {\n    let v: Value = serde_json::from_str(input)?;\n"
                    + "    Ok(Config { url: v[\"url\"].as_str().unwrap_or_default().to_string() })\n}\n",
            "    # validate the password field before saving; never log the secret itself\n"
                    + "    if not form.password or len(form.password) < 12:\n        raise ValueError(\"password too short\")\n",
            "SELECT id, email, created_at FROM users WHERE org_id = $1 ORDER BY created_at DESC LIMIT 50;\n",
            "import os\nAPI_KEY = os.environ.get(\"SERVICE_API_KEY\")\nclient = Client(api_key=API_KEY, timeout=30)\n",
        };
        private static final String[] SHELL = {
            "$ ls -la\ntotal 48\ndrwxr-xr-x  8 dev dev 4096 Nov 30 09:12 .\n-rw-r--r--  1 dev dev  812 Nov 30 09:10 README.md\n"
                    + "-rw-r--r--  1 dev dev 2210 Nov 30 09:11 pyproject.toml\ndrwxr-xr-x  3 dev dev 4096 Nov 30 09:12 src\n",
            "$ git log --oneline -3\n3fbe94e CLI writes through picocli's writers\nbe65a00 docs: sources are validated\n"
                    + "a36263d rules: accept an unquoted all-digit token_sha256\n",
            "$ npm install\nadded 231 packages, and audited 232 packages in 4s\n38 packages are looking for funding\n"
                    + "  run `npm fund` for details\nfound 0 vulnerabilities\n",
            "$ pytest -q\n........................................F.....\nFAILED tests/test_api.py::test_retry - "
                    + "AssertionError: expected 3 attempts, got 2\n1 failed, 45 passed in 2.31s\n",
            "Traceback (most recent call last):\n  File \"/app/src/server.py\", line 88, in handle\n    resp = session.post(url, json=payload)\n"
                    + "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.internal', port=443)\n",
            "$ curl -s https://api.github.com/repos/org/repo/pulls?state=open | jq '.[].title'\n\"Fix flaky retry test\"\n"
                    + "\"Bump jackson to 2.23\"\n",
            "2026-11-30T09:14:02.118Z INFO  [main] dev.app.Server - listening on 0.0.0.0:8080 (max_tokens=4096)\n",
        };
        private static final String[] PROSE = {
            "The function reads the configuration once at start-up and caches it; a reload replaces the whole object. ",
            "To fix the failing test, make the retry policy count the first attempt, then re-run the suite. ",
            "Authentication uses a bearer token from the environment, so nothing secret is written to disk. ",
            "Here is the output of the command you asked for, followed by the relevant part of the source file. ",
        };

        static byte[] body(int size, int credentialEvery, long seed) throws Exception {
            Random random = new Random(seed);
            List<Map<String, Object>> messages = new ArrayList<>();
            messages.add(Map.of("role", "system", "content", "You are a coding agent. Use the tools to inspect the repository."));
            messages.add(Map.of("role", "user", "content", "Why does test_retry fail? Look at the code and logs."));
            int budget = size - 2000;
            int call = 0;
            int sinceCredential = 0;
            int written = 0;
            while (written < budget) {
                StringBuilder tool = new StringBuilder();
                while (tool.length() < 24 * 1024 && written + tool.length() < budget) {
                    int kind = random.nextInt(3);
                    String piece = kind == 0 ? CODE[random.nextInt(CODE.length)]
                            : kind == 1 ? SHELL[random.nextInt(SHELL.length)] : PROSE[random.nextInt(PROSE.length)];
                    tool.append(piece);
                    sinceCredential += piece.length();
                    if (credentialEvery > 0 && sinceCredential >= credentialEvery) {
                        tool.append(credential(random, call++)).append('\n');
                        sinceCredential = 0;
                    }
                }
                String id = "call_" + messages.size();
                Map<String, Object> assistant = new LinkedHashMap<>();
                assistant.put("role", "assistant");
                assistant.put("tool_calls", List.of(Map.of("id", id, "type", "function",
                        "function", Map.of("name", "shell", "arguments", "{\"cmd\": \"cat src/app.py && pytest -q\"}"))));
                messages.add(assistant);
                messages.add(Map.of("role", "tool", "tool_call_id", id, "content", tool.toString()));
                written += tool.length() + tool.length() / 12 + 200;
            }
            ObjectMapper json = new ObjectMapper();
            Map<String, Object> request = new LinkedHashMap<>();
            request.put("model", "gpt-test");
            request.put("max_tokens", 4096);
            request.put("stream", true);
            request.put("messages", messages);
            byte[] b = json.writeValueAsBytes(request);
            // trim or pad the last message's content so the body is exactly `size` bytes
            while (b.length != size) {
                Map<String, Object> last = new LinkedHashMap<>(messages.get(messages.size() - 1));
                String content = (String) last.get("content");
                int diff = size - b.length;
                content = diff > 0 ? content + " ".repeat(diff) : content.substring(0, Math.max(0, content.length() + diff));
                last.put("content", content);
                messages.set(messages.size() - 1, last);
                b = json.writeValueAsBytes(request);
            }
            return b;
        }

        private static final String ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

        private static String rnd(Random r, String alphabet, int n) {
            StringBuilder b = new StringBuilder(n);
            for (int i = 0; i < n; i++) {
                b.append(alphabet.charAt(r.nextInt(alphabet.length())));
            }
            return b.toString();
        }

        /** A made-up credential of one of 11 formats (built at run time; none is real). */
        static String credential(Random r, int i) {
            String urlsafe = ALNUM + "_-";
            switch (i % 11) {
                case 0: return "export AWS_ACCESS_KEY_ID=" + "AKIA" + rnd(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
                case 1: {
                    String body = rnd(r, ALNUM, 30);
                    return "GITHUB_TOKEN=" + "ghp_" + body + GithubChecksum.checksum(body);
                }
                case 2: return "ANTHROPIC_API_KEY=" + "sk-ant-" + "api03-" + rnd(r, urlsafe, 93) + "AA";
                case 3: return "OPENAI_API_KEY=" + "sk-proj-" + rnd(r, urlsafe, 60) + "T3Blbk" + "FJ" + rnd(r, urlsafe, 60);
                case 4: return "SLACK_BOT_TOKEN=" + "xoxb-" + rnd(r, "0123456789", 12) + "-" + rnd(r, "0123456789", 13) + "-" + rnd(r, ALNUM, 24);
                case 5: return "stripe.api_key = '" + "sk_" + "live_" + rnd(r, ALNUM, 24) + "'";
                case 6: return "https://maps.googleapis.com/maps/api/js?key=" + "AIza" + rnd(r, urlsafe, 35);
                case 7: return "Bearer " + "eyJ" + rnd(r, urlsafe, 30) + ".eyJ" + rnd(r, urlsafe, 90) + "." + rnd(r, urlsafe, 43);
                case 8: return "DATABASE_URL=postgres://app:" + rnd(r, ALNUM, 18) + "@db.internal:5432/app";
                case 9: return "DB_PASSWORD=" + rnd(r, ALNUM + "!#%^&*", 20);
                default: {
                    StringBuilder pem = new StringBuilder("-----BEGIN " + "EC PRIVATE KEY-----\n");
                    for (int l = 0; l < 3; l++) {
                        pem.append(rnd(r, ALNUM + "+/", 64)).append('\n');
                    }
                    return pem.append("-----END " + "EC PRIVATE KEY-----").toString();
                }
            }
        }
    }
}
