package dev.sluice.benchmarks;

import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Name decisions per second ({@link Decider#decide}) for one extension with 100 or 10,000 allow rules
 * (60% exact names, 25% {@code *.suffix}, 15% IPv4 CIDR) plus a few deny rules, loaded through
 * {@link PolicyLoader} from generated YAML.
 *
 * <p>Targets rotate over a fixed set: exact hits, wildcard hits (one and two labels deep), CIDR hits,
 * port misses, and names no rule matches; tunnels ({@code request == null}) and visible requests alternate.
 * {@code decide} measures the decision alone; {@code parseAndDecide} adds parsing the CONNECT
 * authority, as the proxy does for every tunnel.
 *
 * <p>Run: {@code java -jar benchmarks/target/benchmarks.jar DecisionBenchmark -f 1 -wi 2 -i 3 -w 2s -r 2s -t 1}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DecisionBenchmark {

    @Param({"100", "10000"})
    public int rules;

    private Policy policy;
    private Extension extension;
    private Target[] targets;
    private String[] authorities;
    private RequestInfo[] requests;
    private int next;

    @Setup(Level.Trial)
    public void setUp() throws PolicyException, MalformedTargetException {
        policy = PolicyLoader.parse(policyYaml(rules), "benchmark.yaml");
        extension = policy.extension("bench").orElseThrow();
        int exact = rules * 60 / 100;
        int wildcard = rules * 25 / 100;
        int cidr = rules - exact - wildcard;
        authorities = new String[] {
            "svc" + (exact / 2) + ".corp.example:443",          // exact hit
            "svc" + (exact - 1) + ".corp.example:443",          // last exact rule
            "a.zone" + (wildcard / 3) + ".example:443",         // wildcard hit
            "a.b.zone" + (wildcard - 1) + ".example:443",       // wildcard hit, two labels
            "10." + ((cidr / 2) >> 8) + "." + ((cidr / 2) & 0xff) + ".9:443", // CIDR hit
            "svc1.corp.example:22",                              // port miss
            "nothing-here.example.net:443",                      // no match
            "deep.sub.domain.of.something.example.org:443",     // no match, many labels
            "blocked.example:443",                                // global deny
            "192.0.2.77:443",                                     // literal, no rule
        };
        targets = new Target[authorities.length];
        requests = new RequestInfo[authorities.length];
        for (int i = 0; i < authorities.length; i++) {
            targets[i] = TargetParser.parseAuthority(authorities[i]);
            requests[i] = i % 2 == 0 ? null : new RequestInfo("GET", "/v1/things");
        }
    }

    @Benchmark
    public Decision decide() {
        int i = next;
        next = i + 1 == targets.length ? 0 : i + 1;
        return Decider.decide(policy, extension, targets[i], requests[i]);
    }

    @Benchmark
    public Decision parseAndDecide() throws MalformedTargetException {
        int i = next;
        next = i + 1 == targets.length ? 0 : i + 1;
        return Decider.decide(policy, extension, TargetParser.parseAuthority(authorities[i]), requests[i]);
    }

    /** Generates a policy with {@code n} allow rules for extension {@code bench}. */
    static String policyYaml(int n) {
        int exact = n * 60 / 100;
        int wildcard = n * 25 / 100;
        int cidr = n - exact - wildcard;
        StringBuilder sb = new StringBuilder(n * 48);
        sb.append("version: 1\nextensions:\n  bench:\n    allow:\n");
        for (int i = 0; i < exact; i++) {
            sb.append("      - host: svc").append(i).append(".corp.example\n");
            if (i % 3 == 0) {
                sb.append("        ports: [443]\n");
            }
        }
        for (int i = 0; i < wildcard; i++) {
            sb.append("      - host: \"*.zone").append(i).append(".example\"\n");
        }
        for (int i = 0; i < cidr; i++) {
            sb.append("      - cidr: 10.").append(i >> 8).append('.').append(i & 0xff).append(".0/24\n")
                    .append("        ports: [443]\n");
        }
        sb.append("    deny:\n      - host: \"*.internal.example\"\n");
        sb.append("deny:\n  - host: blocked.example\n  - cidr: 198.51.100.0/24\n");
        return sb.toString();
    }
}
