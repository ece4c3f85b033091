package dev.sluice.proxy.cli;

import dev.sluice.rules.decision.AddressDecision;
import dev.sluice.rules.decision.Decider;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.RequestInfo;
import dev.sluice.rules.decision.SelfEndpoints;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.MalformedTargetException;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice decide --extension NAME URL|HOST:PORT}: explains what the policy would do — the
 * decision on the name, the reason and the rule id, then the resolved addresses (from
 * {@code network.hosts} or the system resolver) with their classes and the final decision.
 * Exit code 0 when the request would pass (allow or would_deny), 3 when it would be denied, 1 when
 * the policy does not load, 2 for a malformed target or unknown extension.
 */
@Command(name = "decide", description = "Explain what the policy would do with a request.")
final class DecideCommand extends CliCommand implements Callable<Integer> {

    @Mixin
    CommonOptions common;

    @Option(names = "--extension", required = true, paramLabel = "NAME", description = "The extension asking.")
    String extension;

    @Option(names = "--method", paramLabel = "METHOD",
            description = "Method for a URL (default GET); ignored for HOST:PORT (a CONNECT tunnel).")
    String method = "GET";

    @Parameters(index = "0", paramLabel = "URL|HOST:PORT",
            description = "http://host/path, https://host/path, or host:port for a CONNECT tunnel.")
    String target;

    @Override
    public Integer call() {
        Policy policy;
        try {
            policy = common.loadPolicy();
        } catch (PolicyException e) {
            e.errors().forEach(error -> err().println(error));
            return 1;
        }
        Optional<Extension> ext = policy.extension(extension);
        if (ext.isEmpty()) {
            err().println("sluice: no extension named \"" + extension + "\" in " + policy.source());
            return 2;
        }
        Target parsed;
        RequestInfo request = null;
        boolean tls = false;
        try {
            String lower = target.toLowerCase(Locale.ROOT);
            if (lower.startsWith("http://") || lower.startsWith("https://")) {
                tls = lower.startsWith("https://");
                String rest = target.substring(tls ? 8 : 7);
                HttpTarget http = TargetParser.parseAbsoluteForm("http://" + rest);
                parsed = http.target();
                if (tls && !hasExplicitPort(rest)) {
                    parsed = new Target(parsed.host(), 443, parsed.address());
                }
                request = new RequestInfo(method.toUpperCase(Locale.ROOT), http.path());
            } else {
                parsed = TargetParser.parseAuthority(target);
            }
        } catch (MalformedTargetException e) {
            err().println("sluice: malformed_target: " + e.getMessage());
            return 2;
        }
        // a plain http:// request is decided as the listener decides it (an inspected host wants TLS)
        Decision decision = request != null && !tls ? Decider.decidePlainHttp(policy, ext.get(), parsed, request)
                : Decider.decide(policy, ext.get(), parsed, request);
        out().println("extension: " + extension);
        out().println("target:    " + parsed.authority() + (request == null ? " (CONNECT)"
                : " " + request.method() + " " + request.path()));
        out().println("name:      " + decision.verdict().label() + " " + decision.reasonText()
                + " rule=" + decision.ruleId());
        if (!decision.permits()) {
            return 3;
        }
        List<InetAddress> answers = new ArrayList<>();
        if (parsed.isIpLiteral()) {
            answers.add(parsed.address());
        } else if (policy.network().hosts().containsKey(parsed.host())) {
            answers.add(policy.network().hosts().get(parsed.host()));
        } else {
            try {
                answers.addAll(Arrays.asList(InetAddress.getAllByName(parsed.host())));
            } catch (UnknownHostException e) {
                out().println("resolve:   no answer (dns_failure)");
            }
        }
        List<InetSocketAddress> listeners = new ArrayList<>();
        listeners.add(policy.listen().proxy());
        if (policy.listen().admin() != null) {
            listeners.add(policy.listen().admin());
        }
        AddressDecision checked = Decider.checkAddresses(policy, decision, parsed, answers,
                new SelfEndpoints(listeners, Set.of()));
        for (AddressDecision.ClassifiedAddress answer : checked.answers()) {
            out().println("address:   " + answer.address().getHostAddress() + " " + answer.addressClass().label()
                    + (answer.optedIn() ? " (network.allow_private)" : ""));
        }
        Decision last = checked.decision();
        out().println("decision:  " + last.verdict().label() + " " + last.reasonText() + " rule=" + last.ruleId()
                + (checked.dialAddress() == null ? "" : " dial=" + checked.dialAddress().getHostAddress()));
        return last.permits() ? 0 : 3;
    }

    private static boolean hasExplicitPort(String rest) {
        int end = rest.length();
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                end = i;
                break;
            }
        }
        String authority = rest.substring(0, end);
        int bracket = authority.lastIndexOf(']');
        return authority.indexOf(':', bracket + 1) >= 0;
    }
}
