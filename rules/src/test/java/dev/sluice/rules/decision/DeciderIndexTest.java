package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.address.Cidr;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Mode;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.Rule;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The indexed {@link Decider#decide} must agree with the plain scan in list order on every input. */
class DeciderIndexTest {

    private static final String[] LABELS = {"a", "b", "c", "ab"};
    private static final List<Set<Integer>> PORTS = List.of(Set.of(), Set.of(443), Set.of(80, 8080), Set.of(22, 443, 8443));
    private static final List<Set<String>> METHODS = List.of(Set.of(), Set.of(), Set.of("GET"), Set.of("GET", "POST"));
    private static final List<List<String>> PATHS = List.of(List.of(), List.of(), List.of("/a/**"), List.of("/b/*", "/c"));

    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 4, 5, 6, 7, 8})
    void indexAgreesWithScan(long seed) throws Exception {
        Random random = new Random(seed);
        java.util.EnumSet<Reason> seen = java.util.EnumSet.noneOf(Reason.class);
        int cidrAllows = 0;
        for (int round = 0; round < 50; round++) {
            List<Rule> allow = rules(random, "extensions.x.allow", 1 + random.nextInt(30));
            List<Rule> deny = rules(random, "extensions.x.deny", random.nextInt(4));
            List<Rule> global = rules(random, "deny", random.nextInt(3));
            Extension ext = new Extension("x", null, List.of(), allow, deny);
            Policy policy = new Policy(random.nextBoolean() ? Mode.ENFORCE : Mode.REPORT, Map.of("x", ext), global,
                    null, null, null, null, "random", "0", Map.of(), null, null);
            for (int t = 0; t < 200; t++) {
                Target target = target(random);
                RequestInfo request = random.nextInt(3) == 0 ? null
                        : new RequestInfo(random.nextBoolean() ? "GET" : "POST",
                                List.of("/a/x", "/b/y", "/c", "/b/y/z", "/a/../c").get(random.nextInt(5)));
                Decision indexed = Decider.decide(policy, ext, target, request);
                assertThat(indexed)
                        .as("seed %d round %d target %s request %s", seed, round, target, request)
                        .isEqualTo(Decider.decideByScan(policy, ext, target, request));
                seen.add(indexed.reason());
                if (indexed.reason() == Reason.ALLOWLISTED && target.isIpLiteral()) {
                    cidrAllows++;
                }
            }
        }
        // the comparison is not vacuous: every outcome occurs
        assertThat(seen).contains(Reason.ALLOWLISTED, Reason.NOT_ALLOWLISTED, Reason.PORT_NOT_ALLOWED,
                Reason.METHOD_NOT_ALLOWED, Reason.PATH_NOT_ALLOWED, Reason.DENIED_BY_RULE);
        assertThat(cidrAllows).isPositive();
    }

    private static String name(Random random, int labels) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < labels; i++) {
            sb.append(LABELS[random.nextInt(LABELS.length)]).append('.');
        }
        return sb.append("test").toString();
    }

    private static List<Rule> rules(Random random, String prefix, int n) {
        List<Rule> rules = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String host = null;
            Cidr cidr = null;
            switch (random.nextInt(4)) {
                case 0:
                    host = name(random, 1 + random.nextInt(3));
                    break;
                case 1:
                    host = "*." + name(random, random.nextInt(3));
                    break;
                case 2: {
                    int len = 8 + random.nextInt(25);
                    int v = 0x0a000000 | random.nextInt(1 << 10) << 14 | random.nextInt(4);
                    int masked = v & (int) (0xFFFF_FFFFL << (32 - len));
                    cidr = new Cidr(IpAddresses.inet4(masked), len);
                    break;
                }
                default: {
                    int len = random.nextBoolean() ? 32 : 48;
                    byte[] a = new byte[16];
                    a[0] = 0x20;
                    a[1] = 0x01;
                    a[2] = 0x0d;
                    a[3] = (byte) 0xb8;
                    if (len == 48) {
                        a[5] = (byte) random.nextInt(3);
                    }
                    cidr = new Cidr(IpAddresses.inet6(a), len);
                    break;
                }
            }
            rules.add(new Rule(prefix + "[" + i + "]", host, cidr, PORTS.get(random.nextInt(PORTS.size())),
                    METHODS.get(random.nextInt(METHODS.size())), PATHS.get(random.nextInt(PATHS.size()))));
        }
        return rules;
    }

    private static Target target(Random random) throws Exception {
        int port = List.of(80, 443, 8080, 22, 8443).get(random.nextInt(5));
        switch (random.nextInt(5)) {
            case 0:
                return TargetParser.canonicalHost("10." + random.nextInt(256) + "." + random.nextInt(4) + "." + random.nextInt(4), port);
            case 1:
                return TargetParser.canonicalHost("[::ffff:10." + random.nextInt(256) + ".0." + random.nextInt(4) + "]", port);
            case 2:
                return TargetParser.canonicalHost("[2001:db8:0:" + random.nextInt(3) + "::1]", port);
            default:
                return TargetParser.canonicalHost(name(random, 1 + random.nextInt(4)), port);
        }
    }
}
