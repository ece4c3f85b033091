package dev.sluice.benchmarks;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.credential.Credentials;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.intercept.CredentialPhase;
import dev.sluice.rules.credential.Placeholders;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.Target;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The credential phase's own cost per request on an intercepted leg: {@link CredentialPhase} alone in an
 * {@link EmbeddedChannel} (no sockets, no TLS, no forwarder), driven with the same request as it comes
 * from the redaction phase, its placeholder swapped for the real key against no injection.
 *
 * <ul>
 *   <li>{@code headerSwap}: a GET whose {@code Authorization} carries the extension's placeholder (swapped,
 *       {@code Accept-Encoding} set to identity, the credential recorded);</li>
 *   <li>{@code headerOwnKey}: the same request with an ordinary key of the same length (the phase looks
 *       for placeholders and passes it on; the extension still holds the credential, so the response
 *       coding guard is added as with a swap);</li>
 *   <li>{@code headerNoGrant}: the same request from an extension that holds no credential;</li>
 *   <li>{@code bodySwap}, {@code bodyOwnKey}: a 4 KiB JSON POST in two chunks whose {@code api_key} is the
 *       placeholder, or an ordinary key: the body is held whole and decided either way, swapped in the first.</li>
 * </ul>
 * ops/s = requests per second through the phase on one core.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar CredentialBenchmark -f 1 -wi 2 -i 3 -w 2s -r 2s -t 1}.
 * It replaces the end-to-end {@code CredentialInjectionBenchTest} (requests per second through a whole
 * Sluice, dominated by TLS and the loopback origin, which only printed its timing).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class CredentialBenchmark {

    static final String HOST = "api.llm.test";
    static final String REAL = "sk-real-0123456789abcdefghij";
    static final String POLICY = """
            version: 1
            extensions:
              agent:
                allow: [{ host: api.llm.test, ports: [443] }]
                credentials: [llm]
              plain:
                allow: [{ host: api.llm.test, ports: [443] }]
            inspect:
              api.llm.test: {}
            credentials:
              llm:
                source: { env: LLM_REAL }
                inject: { hosts: [api.llm.test], ports: [443], header: authorization, body: true }
            """;

    private Credentials credentials;
    private Policy policy;
    private EmbeddedChannel channel;
    private String placeholder;
    private String ownKey;
    private String bodyFiller;

    /** Reads the policy, prepares its credentials and checks that the swap happens, and only where it should. */
    @Setup(Level.Trial)
    public void setUp() throws Exception {
        byte[] key = new byte[Placeholders.KEY_BYTES];
        Arrays.fill(key, (byte) 7);
        Placeholders placeholders = new Placeholders(key);
        credentials = new Credentials(placeholders, Clock.systemUTC(), Map.of("LLM_REAL", REAL)::get);
        policy = PolicyLoader.parse(POLICY, "credential-benchmark.yaml");
        credentials.prepare(policy);
        placeholder = placeholders.placeholder("agent", "llm");
        ownKey = "sk-own-" + "0".repeat(placeholder.length() - 7);
        bodyFiller = "x".repeat(4096 - 200);
        channel = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ForwardRequest swapped = (ForwardRequest) head("agent", placeholder);
        if (!("Bearer " + REAL).equals(swapped.request().headers().get("Authorization"))) {
            throw new IllegalStateException("the placeholder was not swapped");
        }
        ForwardRequest own = (ForwardRequest) head("agent", ownKey);
        if (!("Bearer " + ownKey).equals(own.request().headers().get("Authorization"))) {
            throw new IllegalStateException("an ordinary key was changed");
        }
        String body = body("agent", placeholder);
        if (!body.contains(REAL) || body.contains(placeholder)) {
            throw new IllegalStateException("the body placeholder was not swapped: " + body.length());
        }
    }

    /** Releases what the channel still holds and stops the credential refresh. */
    @TearDown(Level.Trial)
    public void tearDown() {
        channel.finishAndReleaseAll();
        credentials.close();
    }

    private ForwardRequest request(String extension, HttpMethod method, String auth) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, method, "/v1/chat/completions");
        r.headers().set("Host", HOST).set("User-Agent", "bench/1.0").set("Accept", "application/json")
                .set("Accept-Encoding", "gzip, br").set("Authorization", "Bearer " + auth)
                .set("X-Request-Id", "0123456789abcdef");
        AuditEvent audit = new AuditEvent(record -> { }, Clock.systemUTC()).extension(extension);
        return new ForwardRequest(r, new HttpTarget("https", new Target(HOST, 443, null), r.uri()), null, policy,
                audit, true, null);
    }

    /** One request head through the phase: what it passed on. */
    private Object head(String extension, String auth) {
        channel.writeInbound(request(extension, HttpMethod.GET, auth));
        return channel.readInbound();
    }

    /** One JSON POST through the phase: the body it passed on. */
    private String body(String extension, String apiKey) {
        ForwardRequest request = request(extension, HttpMethod.POST, ownKey);
        request.request().headers().set("Content-Type", "application/json").set("Transfer-Encoding", "chunked");
        String json = "{\"model\":\"m\",\"api_key\":\"" + apiKey + "\",\"messages\":[{\"role\":\"user\",\"content\":\""
                + bodyFiller + "\"}]}";
        int half = json.length() / 2;
        channel.writeInbound(request);
        channel.writeInbound(new DefaultHttpContent(Unpooled.copiedBuffer(json.substring(0, half),
                StandardCharsets.UTF_8)));
        channel.writeInbound(new DefaultLastHttpContent(Unpooled.copiedBuffer(json.substring(half),
                StandardCharsets.UTF_8)));
        StringBuilder out = new StringBuilder(json.length() + 16);
        for (Object m; (m = channel.readInbound()) != null; ) {
            if (m instanceof HttpContent c) {
                out.append(c.content().toString(StandardCharsets.UTF_8));
            }
            ReferenceCountUtil.release(m);
        }
        return out.toString();
    }

    /** A GET with the placeholder in {@code Authorization}, swapped. */
    @Benchmark
    public Object headerSwap() {
        return head("agent", placeholder);
    }

    /** The same GET with an ordinary key: nothing to swap. */
    @Benchmark
    public Object headerOwnKey() {
        return head("agent", ownKey);
    }

    /** The same GET from an extension that holds no credential. */
    @Benchmark
    public Object headerNoGrant() {
        return head("plain", ownKey);
    }

    /** A 4 KiB JSON POST with the placeholder in its body, held and swapped. */
    @Benchmark
    public void bodySwap(Blackhole bh) {
        bh.consume(body("agent", placeholder));
    }

    /** The same POST with an ordinary key in its body, held and passed on. */
    @Benchmark
    public void bodyOwnKey(Blackhole bh) {
        bh.consume(body("agent", ownKey));
    }
}
