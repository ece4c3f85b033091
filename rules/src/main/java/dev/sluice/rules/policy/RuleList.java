package dev.sluice.rules.policy;

import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.target.Target;
import java.net.InetAddress;
import java.util.AbstractList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.RandomAccess;

/**
 * An immutable list of rules that carries a lookup index, so that finding the rules that match a target
 * costs about the same for 10 rules as for 10,000. Not public API: {@code Extension} and {@code Policy}
 * store their rule lists as {@code RuleList}s, and the decider asks them.
 *
 * <p>Index: exact host patterns and {@code *.suffix} patterns in two open-addressing hash tables keyed by
 * the name (the suffix without {@code *.}); a target's host is looked up whole in the first and, at each
 * label boundary, its remaining suffix in the second, hashing the suffixes in one backward pass without
 * allocating. IPv4 prefixes (mapped ones included) in a table keyed by (length, masked network), probed
 * once per distinct prefix length present; IPv6 prefixes are scanned (rare in practice). The matching
 * rules' positions are then evaluated; the lowest position wins, so results are exactly those of a scan
 * in list order.
 */
public final class RuleList extends AbstractList<Rule> implements RandomAccess {

    private static final RuleList EMPTY = new RuleList(new Rule[0]);

    private final Rule[] rules;
    /** Per rule: sorted ports, or null when the rule lists none. */
    private final int[][] ports;
    private final StringTable exact;
    private final StringTable suffix;
    private final LongTable v4;
    /** Distinct IPv4 prefix lengths present, ascending. */
    private final int[] v4Lengths;
    /** Positions of IPv6 CIDR rules, ascending. */
    private final int[] v6Rules;

    private RuleList(Rule[] rules) {
        this.rules = rules;
        this.ports = new int[rules.length][];
        this.exact = new StringTable(rules.length);
        this.suffix = new StringTable(rules.length);
        this.v4 = new LongTable(rules.length);
        boolean[] lengths = new boolean[33];
        int[] v6 = new int[rules.length];
        int v6Count = 0;
        for (int i = 0; i < rules.length; i++) {
            Rule r = rules[i];
            if (!r.ports().isEmpty()) {
                int[] p = r.ports().stream().mapToInt(Integer::intValue).toArray();
                Arrays.sort(p);
                ports[i] = p;
            }
            if (r.cidr() != null) {
                Cidr c = r.cidr();
                byte[] a = c.network().getAddress();
                if (a.length == 4) {
                    v4.add(v4Key(c.prefixLength(), IpAddresses.toInt(a, 0)), i);
                    lengths[c.prefixLength()] = true;
                } else {
                    v6[v6Count++] = i;
                }
            } else if (r.host() != null) {
                if (r.host().startsWith("*.")) {
                    suffix.add(r.host().substring(2), i);
                } else {
                    exact.add(r.host(), i);
                }
            }
        }
        int n = 0;
        for (boolean b : lengths) {
            n += b ? 1 : 0;
        }
        this.v4Lengths = new int[n];
        n = 0;
        for (int len = 0; len <= 32; len++) {
            if (lengths[len]) {
                v4Lengths[n++] = len;
            }
        }
        this.v6Rules = Arrays.copyOf(v6, v6Count);
    }

    /** Returns {@code rules} as a RuleList (the same instance when it already is one). */
    public static RuleList copyOf(List<Rule> rules) {
        if (rules instanceof RuleList) {
            return (RuleList) rules;
        }
        Objects.requireNonNull(rules, "rules");
        if (rules.isEmpty()) {
            return EMPTY;
        }
        Rule[] array = rules.toArray(new Rule[0]);
        for (Rule r : array) {
            Objects.requireNonNull(r, "rule");
        }
        return new RuleList(array);
    }

    @Override
    public Rule get(int index) {
        return rules[index];
    }

    @Override
    public int size() {
        return rules.length;
    }

    /**
     * Calls {@code visitor} with the position of every rule whose host or CIDR matches {@code target}
     * (host rules for DNS names on whole labels, CIDR rules for IP literals), in no particular order.
     */
    public void forEachTargetMatch(Target target, IntVisitor visitor) {
        InetAddress address = target.address();
        if (address != null) {
            byte[] a = address.getAddress();
            if (a.length == 16 && IpAddresses.isMapped(a)) {
                a = new byte[] {a[12], a[13], a[14], a[15]};
            }
            if (a.length == 4) {
                int v = IpAddresses.toInt(a, 0);
                for (int len : v4Lengths) {
                    int masked = len == 0 ? 0 : v & (int) (0xFFFF_FFFFL << (32 - len));
                    v4.forEach(v4Key(len, masked), visitor);
                }
            } else {
                for (int i : v6Rules) {
                    if (rules[i].cidr().contains(address)) {
                        visitor.visit(i);
                    }
                }
            }
            return;
        }
        String host = target.host();
        int n = host.length();
        if (exact.size() > 0) {
            exact.forEach(host, 0, host.hashCode(), visitor);
        }
        if (suffix.size() > 0) {
            // hash of host[from..n) as String.hashCode would compute it, extended leftwards
            int hash = 0;
            int power = 1;
            for (int i = n - 1; i > 0; i--) {
                hash += host.charAt(i) * power;
                power *= 31;
                if (host.charAt(i - 1) == '.' && i - 1 > 0) {
                    suffix.forEach(host, i, hash, visitor);
                }
            }
        }
    }

    /** Answers whether rule {@code index} lists {@code port}; for a rule without ports, {@code dflt}. */
    public boolean portListed(int index, int port, boolean dflt) {
        int[] p = ports[index];
        if (p == null) {
            return dflt;
        }
        if (p.length <= 8) {
            for (int x : p) {
                if (x == port) {
                    return true;
                }
            }
            return false;
        }
        return Arrays.binarySearch(p, port) >= 0;
    }

    private static long v4Key(int length, int masked) {
        return ((long) length << 32) | (masked & 0xFFFF_FFFFL);
    }

    /** Receives rule positions. */
    @FunctionalInterface
    public interface IntVisitor {
        void visit(int index);
    }

    /** Open-addressing multimap from names to rule positions; lookups by region of a string. */
    private static final class StringTable {
        private String[] keys;
        private int[] hashes;
        private int[][] values;
        private int size;

        StringTable(int expected) {
            int cap = Integer.highestOneBit(Math.max(4, expected * 2 - 1)) << 1;
            keys = new String[cap];
            hashes = new int[cap];
            values = new int[cap][];
        }

        int size() {
            return size;
        }

        void add(String key, int value) {
            int h = key.hashCode();
            int mask = keys.length - 1;
            int slot = mix(h) & mask;
            while (keys[slot] != null) {
                if (hashes[slot] == h && keys[slot].equals(key)) {
                    int[] old = values[slot];
                    int[] grown = Arrays.copyOf(old, old.length + 1);
                    grown[old.length] = value;
                    values[slot] = grown;
                    return;
                }
                slot = (slot + 1) & mask;
            }
            keys[slot] = key;
            hashes[slot] = h;
            values[slot] = new int[] {value};
            size++;
        }

        void forEach(String s, int from, int hash, IntVisitor visitor) {
            int mask = keys.length - 1;
            int slot = mix(hash) & mask;
            int length = s.length() - from;
            String k;
            while ((k = keys[slot]) != null) {
                if (hashes[slot] == hash && k.length() == length && s.regionMatches(from, k, 0, length)) {
                    for (int v : values[slot]) {
                        visitor.visit(v);
                    }
                    return;
                }
                slot = (slot + 1) & mask;
            }
        }
    }

    /** Open-addressing multimap from longs to rule positions. */
    private static final class LongTable {
        private final long[] keys;
        private final boolean[] used;
        private final int[][] values;

        LongTable(int expected) {
            int cap = Integer.highestOneBit(Math.max(4, expected * 2 - 1)) << 1;
            keys = new long[cap];
            used = new boolean[cap];
            values = new int[cap][];
        }

        void add(long key, int value) {
            int mask = keys.length - 1;
            int slot = mix(Long.hashCode(key * 0x9E3779B97F4A7C15L)) & mask;
            while (used[slot]) {
                if (keys[slot] == key) {
                    int[] old = values[slot];
                    int[] grown = Arrays.copyOf(old, old.length + 1);
                    grown[old.length] = value;
                    values[slot] = grown;
                    return;
                }
                slot = (slot + 1) & mask;
            }
            used[slot] = true;
            keys[slot] = key;
            values[slot] = new int[] {value};
        }

        void forEach(long key, IntVisitor visitor) {
            int mask = keys.length - 1;
            int slot = mix(Long.hashCode(key * 0x9E3779B97F4A7C15L)) & mask;
            while (used[slot]) {
                if (keys[slot] == key) {
                    for (int v : values[slot]) {
                        visitor.visit(v);
                    }
                    return;
                }
                slot = (slot + 1) & mask;
            }
        }
    }

    private static int mix(int h) {
        h *= 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
