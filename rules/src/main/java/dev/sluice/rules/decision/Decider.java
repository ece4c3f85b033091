package dev.sluice.rules.decision;

import org.jspecify.annotations.Nullable;
import dev.sluice.rules.address.AddressClass;
import dev.sluice.rules.address.AddressClassifier;
import dev.sluice.rules.address.Cidr;
import dev.sluice.rules.internal.PathGlob;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Mode;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.RuleList;
import dev.sluice.rules.policy.Rule;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Decisions as pure functions of values: no network, no clock, no state. Netty handlers ask; they
 * never decide by themselves.
 *
 * <h2>Matching</h2>
 * <ul>
 *   <li>A host rule matches DNS-name targets only, on whole labels: {@code example.com} matches exactly
 *       {@code example.com}; {@code *.example.com} matches {@code a.example.com} and
 *       {@code a.b.example.com}, never {@code example.com} nor {@code evilexample.com}.</li>
 *   <li>A CIDR rule matches IP-literal targets only (a name is decided on the name; its resolved
 *       addresses are checked by {@link #checkAddresses}, not matched against CIDR rules). An
 *       IPv4-mapped IPv6 literal is matched as its IPv4 address.</li>
 *   <li>Ports: an allow rule without {@code ports} allows 80 and 443; a deny rule without {@code ports}
 *       denies every port.</li>
 *   <li>Methods and paths: an allow rule with {@code methods} or {@code paths} allows only requests it
 *       can see and that match; it never allows a tunnel ({@code request == null}), since what travels
 *       inside cannot be checked (fail closed). A deny rule with {@code methods} or {@code paths} denies
 *       matching visible requests, and every tunnel to its host and ports.</li>
 *   <li>{@code HEAD} counts as listed wherever {@code GET} is ({@link Rule#matchesMethod}, RFC 9110
 *       section 9.3.2), in allow and deny rules alike; to allow GET but not HEAD, add a deny rule with
 *       {@code methods: [HEAD]}.</li>
 *   <li>Method case: an allow rule's {@code methods} match exactly (RFC 9110 section 9.1: {@code get} is
 *       not {@code GET}); a deny rule's match in any case, so {@code get} is denied where {@code GET} is.</li>
 * </ul>
 *
 * <h2>Order and reasons</h2>
 * Deny rules first (the extension's, then the global {@code deny} list; the first match decides,
 * {@link Reason#DENIED_BY_RULE}). Then the allow rules in order (the extension's own, then each group's
 * in the order the groups are listed); the first rule that matches host, port, method and path
 * allows ({@link Reason#ALLOWLISTED}). Otherwise the nearest miss decides: a rule matched host, port and
 * method but not the path → {@link Reason#PATH_NOT_ALLOWED}; else host and port but not the method →
 * {@link Reason#METHOD_NOT_ALLOWED}; else the host but not the port → {@link Reason#PORT_NOT_ALLOWED};
 * the rule id is the first such rule. Nothing matched the host → {@link Reason#NOT_ALLOWLISTED} with rule
 * id {@code implicit-deny}. In report mode every one of these denials is {@link Verdict#WOULD_DENY}
 * with the same reason and rule id.
 */
public final class Decider {

    /** Rule id of a decision where no rule matched. */
    public static final String IMPLICIT_DENY = BuiltinRules.IMPLICIT_DENY;
    /** Rule id of an {@link Reason#ADDRESS_CLASS} denial. */
    public static final String ADDRESS_CLASS_RULE = BuiltinRules.ADDRESS_CLASS;
    /** Rule id of a {@link Reason#SELF_LOOP} denial. */
    public static final String SELF_RULE = BuiltinRules.SELF;
    /** Rule id of a {@link Reason#DNS_FAILURE} denial (no answers). */
    public static final String DNS_RULE = BuiltinRules.DNS;

    private Decider() {
    }

    /**
     * Decides on the name (design.md step 4): deny entries (the extension's, then global) always win;
     * then the extension's allow rules and its groups (exact host, {@code *.suffix} for subdomains only,
     * CIDR for IP literals), then ports, then methods and paths when {@code request} is non-null.
     * In report mode a rule miss becomes {@link Verdict#WOULD_DENY}. See the class Javadoc for details.
     *
     * @param policy the policy snapshot (its mode and global deny list)
     * @param extension the identified extension, one of {@code policy}'s
     * @param target the canonical target
     * @param request the visible request, or null for a tunnel
     * @return the decision, never null
     */
    public static Decision decide(Policy policy, Extension extension, Target target, @Nullable RequestInfo request) {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(extension, "extension");
        Objects.requireNonNull(target, "target");
        RuleList extensionDeny = RuleList.copyOf(extension.deny());
        int deny = firstDeny(extensionDeny, target, request);
        if (deny >= 0) {
            return miss(policy, Reason.DENIED_BY_RULE, extensionDeny.get(deny).id());
        }
        RuleList globalDeny = RuleList.copyOf(policy.globalDeny());
        deny = firstDeny(globalDeny, target, request);
        if (deny >= 0) {
            return miss(policy, Reason.DENIED_BY_RULE, globalDeny.get(deny).id());
        }
        RuleList allow = RuleList.copyOf(extension.allow());
        AllowSearch search = new AllowSearch(allow, target.port(), request);
        allow.forEachTargetMatch(target, search);
        if (search.bestRank == AllowSearch.ALLOWED) {
            return Decision.allow(allow.get(search.bestIndex).id());
        }
        if (search.bestRank > 0) {
            return miss(policy, AllowSearch.REASONS[search.bestRank], allow.get(search.bestIndex).id());
        }
        return miss(policy, Reason.NOT_ALLOWLISTED, IMPLICIT_DENY);
    }

    /**
     * Decides a plain HTTP request, one Sluice reads without TLS (absolute-form {@code http://} on the
     * explicit listener, or HTTP on the transparent listener): {@link #decide}, except that a request it
     * lets through (allowed, or {@link Verdict#WOULD_DENY} in report mode) to a name under the policy's
     * {@code inspect} is denied with {@link Reason#TLS_REQUIRED} in every mode. An inspected host's
     * redaction, red flags, credential rules, token budget and pins apply to the requests of its
     * intercepted TLS tunnels; a plain request to it would skip them all, so it fails closed.
     *
     * @param policy the policy snapshot
     * @param extension the identified extension
     * @param target the canonical target
     * @param request the visible request
     * @return the decision, never null
     */
    public static Decision decidePlainHttp(Policy policy, Extension extension, Target target, RequestInfo request) {
        Objects.requireNonNull(request, "request");
        Decision decision = decide(policy, extension, target, request);
        if (decision.verdict() == Verdict.DENY || target.isIpLiteral() || policy.inspected(target.host()).isEmpty()) {
            return decision;
        }
        return Decision.deny(Reason.TLS_REQUIRED, BuiltinRules.INSPECT);
    }

    /**
     * Decides a tunnel (a CONNECT, or a TLS connection on the transparent listener whose SNI names
     * {@code target}) and says what it becomes: {@link TunnelMode#INTERCEPT} when {@code target} is a
     * name under the policy's {@code inspect}, {@link TunnelMode#BLIND} otherwise. The verdict is
     * {@link #decide} with no visible request, except that a rule which names the host and port but
     * limits methods or paths lets an intercepted tunnel open (each request inside is decided on its
     * own with its method and path; {@link Reason#METHOD_NOT_ALLOWED} / {@link Reason#PATH_NOT_ALLOWED}
     * become an allow by that rule). A blind tunnel is never allowed by such a rule.
     *
     * @param policy the policy snapshot
     * @param extension the identified extension
     * @param target the canonical tunnel target
     * @return the decision, with {@link Decision#tunnelMode()} set, never null
     */
    public static Decision decideTunnel(Policy policy, Extension extension, Target target) {
        Decision decision = decide(policy, extension, target, null);
        java.util.Optional<dev.sluice.rules.policy.InspectedHost> inspected = target.isIpLiteral()
                ? java.util.Optional.empty() : policy.inspected(target.host());
        if (inspected.isEmpty()) {
            return decision.blindTunnel();
        }
        if (decision.verdict() != Verdict.ALLOW
                && (decision.reason() == Reason.METHOD_NOT_ALLOWED || decision.reason() == Reason.PATH_NOT_ALLOWED)) {
            decision = Decision.allow(decision.ruleId());
        }
        return decision.interceptedTunnel(inspected.get());
    }

    /** Rule id of a refusal of a tunnel's SNI that no rule decided (malformed, or an inspected host). */
    public static final String SNI_RULE = BuiltinRules.TLS_SNI;

    /**
     * Decides the first bytes of an allowed blind tunnel (a CONNECT whose {@link #decideTunnel} said
     * {@link TunnelMode#BLIND}), before any of them goes upstream: the defence against domain fronting
     * and against non-TLS traffic on a TLS-only port. In order:
     * <ol>
     *   <li>Not a TLS ClientHello ({@code tls == false}): refused with {@link Reason#NOT_HTTP_OR_TLS}
     *       when the rule that allowed the tunnel is {@code tls_only} on the target's port
     *       ({@link Rule#tlsOnlyOn}: written, or by default port 443); else the tunnel stands.</li>
     *   <li>A ClientHello without SNI: allowed for an IP-literal target (SNI never names an address);
     *       for a named target it is {@link Reason#NO_SNI} (the server would pick the host from
     *       whatever the client says inside).</li>
     *   <li>An SNI whose canonical form ({@code TargetParser.canonicalHost}) is the target's host: the
     *       tunnel stands.</li>
     *   <li>Any other SNI must itself be allowed to this extension on the target's port as a blind
     *       tunnel ({@link #decideTunnel}); then the decision is that allow, by the rule that allows the
     *       SNI. An SNI under {@code inspect} is always refused (an inspected host is never reached
     *       through a blind tunnel), as is an SNI with no canonical form, with rule id
     *       {@value #SNI_RULE}; an SNI the policy does not allow is {@link Reason#SNI_MISMATCH} with the
     *       rule id of the miss.</li>
     * </ol>
     * Rule misses are {@link Verdict#WOULD_DENY} in report mode; the two {@value #SNI_RULE} refusals
     * are enforced in every mode. With Encrypted ClientHello (RFC 9849) only the outer ClientHello is
     * visible: its SNI (the client-facing server) is what is decided here.
     *
     * @param policy the policy snapshot
     * @param extension the identified extension
     * @param target the canonical tunnel target
     * @param tunnel the tunnel's decision (it permits; {@link TunnelMode#BLIND})
     * @param tls whether the first bytes are a complete, well-formed TLS ClientHello
     * @param serverName the ClientHello's {@code host_name} as sent, or null when it has none
     * @return {@code tunnel} itself when the first bytes change nothing, else the new decision (with
     *     {@link TunnelMode#BLIND}), never null
     */
    public static Decision decideTunnelStart(Policy policy, Extension extension, Target target, Decision tunnel,
                                             boolean tls, String serverName) {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(extension, "extension");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(tunnel, "tunnel");
        if (!tls) {
            Rule rule = allowRule(extension, tunnel.ruleId());
            boolean tlsOnly = rule == null ? target.port() == 443 : rule.tlsOnlyOn(target.port());
            return tlsOnly ? miss(policy, Reason.NOT_HTTP_OR_TLS, tunnel.ruleId()).blindTunnel()
                    : tunnel;
        }
        if (serverName == null) {
            return target.isIpLiteral() ? tunnel
                    : miss(policy, Reason.NO_SNI, tunnel.ruleId()).blindTunnel();
        }
        Target sni;
        try {
            sni = TargetParser.canonicalHost(serverName, target.port());
        } catch (MalformedTargetException e) {
            return Decision.deny(Reason.SNI_MISMATCH, SNI_RULE).blindTunnel();
        }
        if (sni.host().equals(target.host())) {
            return tunnel;
        }
        Decision bySni = decideTunnel(policy, extension, sni);
        if (bySni.tunnelMode() == TunnelMode.INTERCEPT) {
            return Decision.deny(Reason.SNI_MISMATCH, SNI_RULE).blindTunnel();
        }
        if (bySni.verdict() == Verdict.ALLOW) {
            return bySni;
        }
        return miss(policy, Reason.SNI_MISMATCH, bySni.ruleId()).blindTunnel();
    }

    /** Returns the extension's allow rule with id {@code ruleId}, or null. */
    private static Rule allowRule(Extension extension, String ruleId) {
        for (Rule rule : extension.allow()) {
            if (rule.id().equals(ruleId)) {
                return rule;
            }
        }
        return null;
    }

    /**
     * Decides a TLS connection on the transparent listener whose ClientHello carries no SNI: only a CIDR
     * rule for the original destination ({@code originalDestination}, an IP-literal target) allows it,
     * as a {@link TunnelMode#BLIND} tunnel; any miss is reported as {@link Reason#NO_SNI} with the rule
     * id of the miss.
     *
     * @param originalDestination the connection's original destination as an IP-literal target
     * @return the decision, with {@link TunnelMode#BLIND}, never null
     */
    public static Decision decideTunnelWithoutSni(Policy policy, Extension extension, Target originalDestination) {
        Decision decision = decide(policy, extension, originalDestination, null);
        if (decision.verdict() != Verdict.ALLOW) {
            decision = new Decision(decision.verdict(), Reason.NO_SNI, decision.ruleId(), null);
        }
        return decision.blindTunnel();
    }

    /** Refusals a person may lift by approving: an allowlist miss of host, port, method or path. */
    private static final java.util.Set<Reason> APPROVABLE = java.util.EnumSet.of(Reason.NOT_ALLOWLISTED,
            Reason.PORT_NOT_ALLOWED, Reason.METHOD_NOT_ALLOWED, Reason.PATH_NOT_ALLOWED);

    /**
     * Answers whether a refusal may be held for a person's approval ({@code approvals} in the policy):
     * only an allowlist miss ({@code not_allowlisted}, {@code port_not_allowed}, {@code method_not_allowed},
     * {@code path_not_allowed}) — never an address-class or self-loop refusal, a deny rule or a malformed
     * request — and never for an IP literal of a protected address class, which no approval could open.
     *
     * @param decision a decision that does not permit
     * @param target the request's canonical target
     */
    public static boolean approvable(Decision decision, Target target) {
        if (decision.permits() || !APPROVABLE.contains(decision.reason())) {
            return false;
        }
        return !(target.isIpLiteral() && AddressClassifier.classify(target.address()) != AddressClass.PUBLIC);
    }

    /**
     * Decides a WebSocket handshake to a host: refused ({@link Reason#WEBSOCKET_REFUSED}, rule
     * {@link BuiltinRules#INSPECT_WEBSOCKET}) when the host is inspected with {@code websocket: refuse},
     * allowed otherwise (what the relay then does with the frames is the mode's business).
     *
     * @param mode the inspected host's {@code websocket} mode, or null for a host that is not inspected
     */
    public static Decision decideWebSocket(dev.sluice.rules.policy.@Nullable WebSocketMode mode) {
        return mode == dev.sluice.rules.policy.WebSocketMode.REFUSE
                ? Decision.deny(Reason.WEBSOCKET_REFUSED, BuiltinRules.INSPECT_WEBSOCKET)
                : Decision.allow(BuiltinRules.INSPECT_WEBSOCKET);
    }

    /**
     * Decides a DNS query of a transparent sandbox for {@code target} (RFC 1035 name, made canonical):
     * an IP literal is never answered; a name is answered when {@link #decideName} permits it. A
     * decision that does not allow carries {@link Reason#DNS_NOT_ALLOWLISTED} with the verdict and rule
     * that decided it (so a report-mode miss is answered and recorded as {@code would_deny}).
     *
     * @return the decision; {@link Decision#permits()} tells whether the name is answered
     */
    public static Decision decideDnsQuery(Policy policy, Extension extension, Target target) {
        if (target.isIpLiteral()) {
            return Decision.deny(Reason.DNS_NOT_ALLOWLISTED, BuiltinRules.DNS_QUERY);
        }
        Decision decision = decideName(policy, extension, target.host());
        if (decision.verdict() == Verdict.ALLOW) {
            return decision;
        }
        return new Decision(decision.verdict(), Reason.DNS_NOT_ALLOWLISTED, decision.ruleId(), null);
    }

    /**
     * Decides a DNS name for the transparent sandboxes' DNS responder: whether {@code extension} may reach
     * {@code host} on any port its rules could allow (80, 443 and every port a host rule lists). An
     * allowed tunnel on some port wins; a plain request whose method or path is limited counts as
     * reachable too (a refusal only of method or path means a visible request can pass), so the name
     * resolves and the request itself is decided later. Otherwise the decision for port 443 is returned.
     *
     * @param host a canonical DNS name (not an IP literal)
     * @return the decision, never null; {@link Decision#permits()} tells whether the name is answered
     */
    public static Decision decideName(Policy policy, Extension extension, String host) {
        Objects.requireNonNull(host, "host");
        java.util.TreeSet<Integer> ports = new java.util.TreeSet<>();
        ports.add(443);
        ports.add(80);
        for (Rule rule : extension.allow()) {
            if (rule.host() != null) {
                ports.addAll(rule.ports());
            }
        }
        Decision on443 = null;
        for (int port : ports) {
            Decision d = decide(policy, extension, new Target(host, port, null), null);
            if (d.verdict() == Verdict.ALLOW) {
                return d;
            }
            if (d.reason() == Reason.METHOD_NOT_ALLOWED || d.reason() == Reason.PATH_NOT_ALLOWED) {
                return Decision.allow(d.ruleId());
            }
            if (port == 443) {
                on443 = d;
            }
        }
        return on443;
    }

    /** Returns the position of the first deny rule matching target, port and request, or -1. */
    private static int firstDeny(RuleList rules, Target target, @Nullable RequestInfo request) {
        if (rules.isEmpty()) {
            return -1;
        }
        DenySearch search = new DenySearch(rules, target.port(), request);
        rules.forEachTargetMatch(target, search);
        return search.first;
    }

    /** Keeps the first rule (by position) of the best rank: allowed, else the nearest miss. */
    private static final class AllowSearch implements RuleList.IntVisitor {
        static final int ALLOWED = 4;
        static final Reason[] REASONS = {null, Reason.PORT_NOT_ALLOWED, Reason.METHOD_NOT_ALLOWED,
            Reason.PATH_NOT_ALLOWED, Reason.ALLOWLISTED};

        final RuleList rules;
        final int port;
        final @Nullable RequestInfo request;
        int bestRank;
        int bestIndex = Integer.MAX_VALUE;

        AllowSearch(RuleList rules, int port, @Nullable RequestInfo request) {
            this.rules = rules;
            this.port = port;
            this.request = request;
        }

        @Override
        public void visit(int index) {
            if (bestRank == ALLOWED && index > bestIndex) {
                return;
            }
            int rank = rank(index);
            if (rank > bestRank || (rank == bestRank && index < bestIndex)) {
                bestRank = rank;
                bestIndex = index;
            }
        }

        private int rank(int index) {
            if (!rules.portListed(index, port, port == 80 || port == 443)) {
                return 1;
            }
            Rule rule = rules.get(index);
            if (!rule.methods().isEmpty() && (request == null || !rule.matchesMethod(request.method()))) {
                return 2;
            }
            if (!rule.paths().isEmpty() && (request == null || !anyPathMatches(rule, request.path()))) {
                return 3;
            }
            return ALLOWED;
        }
    }

    /** Keeps the first rule (by position) that denies. */
    private static final class DenySearch implements RuleList.IntVisitor {
        final RuleList rules;
        final int port;
        final @Nullable RequestInfo request;
        int first = -1;

        DenySearch(RuleList rules, int port, @Nullable RequestInfo request) {
            this.rules = rules;
            this.port = port;
            this.request = request;
        }

        @Override
        public void visit(int index) {
            if (first >= 0 && index > first) {
                return;
            }
            if (rules.portListed(index, port, true) && denyRequestMatches(rules.get(index), request)) {
                first = index;
            }
        }
    }

    /**
     * The reference semantics, as a plain scan in list order; {@link #decide} must agree with it (tested).
     * Package-private for tests.
     */
    static Decision decideByScan(Policy policy, Extension extension, Target target, @Nullable RequestInfo request) {
        for (Rule rule : extension.deny()) {
            if (denyMatches(rule, target, request)) {
                return miss(policy, Reason.DENIED_BY_RULE, rule.id());
            }
        }
        for (Rule rule : policy.globalDeny()) {
            if (denyMatches(rule, target, request)) {
                return miss(policy, Reason.DENIED_BY_RULE, rule.id());
            }
        }
        Reason nearest = null;
        String nearestId = null;
        int nearestRank = 0;
        for (Rule rule : extension.allow()) {
            if (!targetMatches(rule, target)) {
                continue;
            }
            Reason miss = allowMiss(rule, target.port(), request);
            if (miss == null) {
                return Decision.allow(rule.id());
            }
            int rank = rank(miss);
            if (rank > nearestRank) {
                nearest = miss;
                nearestId = rule.id();
                nearestRank = rank;
            }
        }
        if (nearest != null) {
            return miss(policy, nearest, nearestId);
        }
        return miss(policy, Reason.NOT_ALLOWLISTED, IMPLICIT_DENY);
    }

    /**
     * Checks resolved answers (design.md step 5). Every answer is classified. Then, in this order:
     * no answers → {@link Reason#DNS_FAILURE} (rule id {@code network.dns}); any answer that is one of
     * Sluice's own listeners on the target's port → {@link Reason#SELF_LOOP} (rule id
     * {@code network.self}, never opted in); any non-public answer not covered by
     * {@code network.allow_private} → {@link Reason#ADDRESS_CLASS} with that class (rule id
     * {@code network.address_class}; metadata and unspecified are never covered). Otherwise the name
     * decision stands and {@code dialAddress} is the first answer. Enforced in every mode. When
     * {@code nameDecision} does not permit, it is returned unchanged with no dial address.
     *
     * @param answers the resolver's answers (for an IP literal: just that address); empty means {@code dns_failure}
     * @param self Sluice's own listeners
     */
    public static AddressDecision checkAddresses(Policy policy, Decision nameDecision, Target target,
                                                 List<InetAddress> answers, SelfEndpoints self) {
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(nameDecision, "nameDecision");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(answers, "answers");
        Objects.requireNonNull(self, "self");
        List<AddressDecision.ClassifiedAddress> classified = new ArrayList<>(answers.size());
        for (InetAddress answer : answers) {
            AddressClass c = AddressClassifier.classify(answer);
            classified.add(new AddressDecision.ClassifiedAddress(answer, c, optedIn(policy, c, answer)));
        }
        if (!nameDecision.permits()) {
            return new AddressDecision(nameDecision, null, classified);
        }
        if (answers.isEmpty()) {
            return new AddressDecision(Decision.deny(Reason.DNS_FAILURE, DNS_RULE), null, classified);
        }
        for (InetAddress answer : answers) {
            if (self.isSelf(answer, target.port())) {
                return new AddressDecision(Decision.deny(Reason.SELF_LOOP, SELF_RULE), null, classified);
            }
        }
        for (AddressDecision.ClassifiedAddress c : classified) {
            if (c.addressClass() != AddressClass.PUBLIC && !c.optedIn()) {
                return new AddressDecision(
                        new Decision(Verdict.DENY, Reason.ADDRESS_CLASS, ADDRESS_CLASS_RULE, c.addressClass()),
                        null, classified);
            }
        }
        return new AddressDecision(nameDecision, answers.get(0), classified);
    }

    private static boolean optedIn(Policy policy, AddressClass c, InetAddress address) {
        if (c == AddressClass.PUBLIC || c == AddressClass.METADATA || c == AddressClass.UNSPECIFIED) {
            return false;
        }
        for (Cidr cidr : policy.network().allowPrivate()) {
            if (cidr.contains(address)) {
                return true;
            }
        }
        return false;
    }

    private static Decision miss(Policy policy, Reason reason, String ruleId) {
        Verdict verdict = policy.mode() == Mode.REPORT ? Verdict.WOULD_DENY : Verdict.DENY;
        return new Decision(verdict, reason, ruleId, null);
    }

    private static int rank(Reason miss) {
        switch (miss) {
            case PATH_NOT_ALLOWED:
                return 3;
            case METHOD_NOT_ALLOWED:
                return 2;
            default:
                return 1;
        }
    }

    /** Returns null when the rule allows port and request, else the reason it does not. */
    static @Nullable Reason allowMiss(Rule rule, int port, @Nullable RequestInfo request) {
        if (!allowPortMatches(rule, port)) {
            return Reason.PORT_NOT_ALLOWED;
        }
        if (!rule.methods().isEmpty() && (request == null || !rule.matchesMethod(request.method()))) {
            return Reason.METHOD_NOT_ALLOWED;
        }
        if (!rule.paths().isEmpty() && (request == null || !anyPathMatches(rule, request.path()))) {
            return Reason.PATH_NOT_ALLOWED;
        }
        return null;
    }

    static boolean denyMatches(Rule rule, Target target, @Nullable RequestInfo request) {
        if (!targetMatches(rule, target)) {
            return false;
        }
        if (!rule.ports().isEmpty() && !rule.ports().contains(target.port())) {
            return false;
        }
        return denyRequestMatches(rule, request);
    }

    private static boolean denyRequestMatches(Rule rule, @Nullable RequestInfo request) {
        if (request == null) {
            return true; // a tunnel may carry any method and path
        }
        // Methods are case-sensitive (RFC 9110 section 9.1), but some origins take `get` for GET: a deny
        // rule matches a method in any case, so a case variant never slips past it (fail closed).
        if (!rule.matchesMethod(request.method())
                && !rule.matchesMethod(request.method().toUpperCase(java.util.Locale.ROOT))) {
            return false;
        }
        if (!rule.paths().isEmpty()) {
            if (PathGlob.isAmbiguous(request.path())) {
                return true;
            }
            for (String glob : rule.paths()) {
                if (PathGlob.matchesLoosely(glob, request.path())) {
                    return true;
                }
            }
            return false;
        }
        return true;
    }

    private static boolean anyPathMatches(Rule rule, String path) {
        for (String glob : rule.paths()) {
            if (PathGlob.matches(glob, path)) {
                return true;
            }
        }
        return false;
    }

    static boolean allowPortMatches(Rule rule, int port) {
        return rule.ports().isEmpty() ? port == 80 || port == 443 : rule.ports().contains(port);
    }

    /** Host rules match names on whole labels; CIDR rules match IP literals. */
    static boolean targetMatches(Rule rule, Target target) {
        if (rule.cidr() != null) {
            return target.isIpLiteral() && rule.cidr().contains(target.address());
        }
        if (target.isIpLiteral()) {
            return false;
        }
        String pattern = rule.host();
        String host = target.host();
        if (pattern.startsWith("*.")) {
            int suffixLength = pattern.length() - 1; // ".example.com"
            return host.length() > suffixLength && host.regionMatches(host.length() - suffixLength, pattern, 1, suffixLength);
        }
        return host.equals(pattern);
    }
}
