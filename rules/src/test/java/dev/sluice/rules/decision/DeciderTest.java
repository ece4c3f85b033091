package dev.sluice.rules.decision;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.rules.address.AddressClass;
import dev.sluice.hosts.IpAddresses;
import dev.sluice.rules.policy.Extension;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.Target;
import dev.sluice.rules.target.TargetParser;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DeciderTest {

    static final String POLICY = """
            version: 1
            extensions:
              github:
                allow:
                  - host: api.github.com
                  - host: "*.githubusercontent.com"
                    ports: [443]
                  - cidr: 203.0.113.0/24
                    ports: [443]
                  - host: registry.example.org
                    methods: [GET, HEAD]
                    paths: ["/@scope/**", "/pkg/*/meta"]
                  - host: uploads.example.com
                    ports: [8443]
                  - host: uploads.example.com
                    ports: [443]
                    methods: [PUT]
                  - cidr: 2001:db8:1::/48
                deny:
                  - host: gist.githubusercontent.com
                groups: [llm]
              other:
                allow:
                  - host: "*.example.com"
                  - host: example.com
                    ports: [8080]
                  - host: blocked.test
              limited:
                allow:
                  - host: files.example.org
                    paths: ["/public/**"]
            groups:
              llm:
                - host: api.anthropic.com
                  ports: [443]
                - host: api.github.com
                  ports: [9999]
            deny:
              - host: blocked.test
              - host: "*.evil.test"
                ports: [443]
              - host: admin.example.com
                methods: [DELETE]
            """;

    static final Policy ENFORCE = load(POLICY);
    static final Policy REPORT = load(POLICY.replace("version: 1\n", "version: 1\nmode: report\n"));

    static Policy load(String yaml) {
        try {
            return PolicyLoader.parse(yaml, "test.yaml");
        } catch (Exception e) {
            throw new AssertionError(e.getMessage(), e);
        }
    }

    /** target: an authority (CONNECT, no request) or an http:// URL (request with method and its path). */
    static Decision decide(Policy policy, String extension, String target, String method) throws Exception {
        Extension ext = policy.extension(extension).orElseThrow();
        if (target.startsWith("http://")) {
            HttpTarget http = TargetParser.parseAbsoluteForm(target);
            return Decider.decide(policy, ext, http.target(), new RequestInfo(method, http.path()));
        }
        return Decider.decide(policy, ext, TargetParser.parseAuthority(target), null);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            exact host, default port 443           | github  | api.github.com:443                       | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[0]
            exact host, default port 80            | github  | http://api.github.com/repos              | GET    | ALLOW | ALLOWLISTED        | extensions.github.allow[0]
            exact host, case and trailing dot      | github  | API.GitHub.COM.:443                      | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[0]
            exact host, port outside default       | github  | api.github.com:8443                      | -      | DENY  | PORT_NOT_ALLOWED   | extensions.github.allow[0]
            group rule allows an extra port        | github  | api.github.com:9999                      | -      | ALLOW | ALLOWLISTED        | groups.llm[1]
            exact never matches a longer name      | github  | evilapi.github.com:443                   | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            exact never matches a subdomain        | github  | x.api.github.com:443                     | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            wildcard matches one label             | github  | raw.githubusercontent.com:443            | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[1]
            wildcard matches deeper labels         | github  | a.b.githubusercontent.com:443            | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[1]
            wildcard never matches the apex        | github  | githubusercontent.com:443                | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            wildcard needs a label boundary        | github  | evilgithubusercontent.com:443            | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            wildcard with explicit ports only      | github  | raw.githubusercontent.com:80             | -      | DENY  | PORT_NOT_ALLOWED   | extensions.github.allow[1]
            extension deny beats wildcard allow    | github  | gist.githubusercontent.com:443           | -      | DENY  | DENIED_BY_RULE     | extensions.github.deny[0]
            global deny beats everything           | other   | blocked.test:443                         | -      | DENY  | DENIED_BY_RULE     | deny[0]
            global deny with ports                 | other   | a.evil.test:443                          | -      | DENY  | DENIED_BY_RULE     | deny[1]
            global deny other port not matched     | other   | a.evil.test:80                           | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            deny with method hits the method       | other   | http://admin.example.com/x               | DELETE | DENY  | DENIED_BY_RULE     | deny[2]
            deny with method spares other methods  | other   | http://admin.example.com/x               | GET    | ALLOW | ALLOWLISTED        | extensions.other.allow[0]
            deny with method denies tunnels        | other   | admin.example.com:443                    | -      | DENY  | DENIED_BY_RULE     | deny[2]
            cidr rule matches IP literal           | github  | 203.0.113.7:443                          | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[2]
            cidr rule matches inet_aton spelling   | github  | 3405803783:443                           | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[2]
            cidr rule matches mapped literal       | github  | [::ffff:203.0.113.7]:443                 | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[2]
            cidr rule port                         | github  | 203.0.113.7:80                           | -      | DENY  | PORT_NOT_ALLOWED   | extensions.github.allow[2]
            cidr outside                           | github  | 203.0.114.7:443                          | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            ipv6 cidr                              | github  | [2001:db8:1:2::3]:443                    | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[6]
            method and path allowed                | github  | http://registry.example.org/@scope/a/b     | GET    | ALLOW | ALLOWLISTED        | extensions.github.allow[3]
            path glob star one segment             | github  | http://registry.example.org/pkg/left/meta  | HEAD   | ALLOW | ALLOWLISTED        | extensions.github.allow[3]
            path glob star not two segments        | github  | http://registry.example.org/pkg/a/b/meta   | GET    | DENY  | PATH_NOT_ALLOWED   | extensions.github.allow[3]
            method not allowed                     | github  | http://registry.example.org/@scope/a       | POST   | DENY  | METHOD_NOT_ALLOWED | extensions.github.allow[3]
            methods are case-sensitive             | github  | http://registry.example.org/@scope/a       | get    | DENY  | METHOD_NOT_ALLOWED | extensions.github.allow[3]
            path not allowed                       | github  | http://registry.example.org/other          | GET    | DENY  | PATH_NOT_ALLOWED   | extensions.github.allow[3]
            dot segments never match a glob        | github  | http://registry.example.org/@scope/../x    | GET    | DENY  | PATH_NOT_ALLOWED   | extensions.github.allow[3]
            encoded slash never matches a glob     | github  | http://registry.example.org/@scope%2f..%2fx | GET   | DENY  | PATH_NOT_ALLOWED   | extensions.github.allow[3]
            method-limited rule never allows tunnel | github | registry.example.org:443                   | -      | DENY  | METHOD_NOT_ALLOWED | extensions.github.allow[3]
            nearest miss wins over port miss      | github  | http://uploads.example.com:443/f          | GET    | DENY  | METHOD_NOT_ALLOWED | extensions.github.allow[5]
            later rule allows another port        | github  | uploads.example.com:8443                  | -      | ALLOW | ALLOWLISTED        | extensions.github.allow[4]
            port miss names first host match      | github  | uploads.example.com:22                    | -      | DENY  | PORT_NOT_ALLOWED   | extensions.github.allow[4]
            group rule                            | github  | api.anthropic.com:443                     | -      | ALLOW | ALLOWLISTED        | groups.llm[0]
            group rule port                       | github  | api.anthropic.com:80                      | -      | DENY  | PORT_NOT_ALLOWED   | groups.llm[0]
            other extension has no group          | other   | api.anthropic.com:443                     | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            wildcard then apex rule               | other   | example.com:8080                          | -      | ALLOW | ALLOWLISTED        | extensions.other.allow[1]
            apex not covered by wildcard ports    | other   | example.com:443                           | -      | DENY  | PORT_NOT_ALLOWED   | extensions.other.allow[1]
            host rules never match IP literals    | other   | 93.184.216.34:443                         | -      | DENY  | NOT_ALLOWLISTED    | implicit-deny
            path-limited rule, path ok            | limited | http://files.example.org/public/a.txt     | GET    | ALLOW | ALLOWLISTED        | extensions.limited.allow[0]
            path-limited rule never allows tunnel | limited | files.example.org:443                     | -      | DENY  | PATH_NOT_ALLOWED   | extensions.limited.allow[0]
            """)
    void enforce(String scenario, String extension, String target, String method, Verdict verdict, Reason reason,
                 String ruleId) throws Exception {
        Decision d = decide(ENFORCE, extension, target, method);
        assertThat(d.verdict()).as("verdict").isEqualTo(verdict);
        assertThat(d.reason()).as("reason").isEqualTo(reason);
        assertThat(d.ruleId()).as("rule id").isEqualTo(ruleId);
        assertThat(d.addressClass()).isNull();
    }

    static final Policy HEAD_POLICY = load("""
            version: 1
            extensions:
              reader:
                allow:
                  - host: get.example.org
                    methods: [GET]
                  - host: post.example.org
                    methods: [POST]
                  - host: nohead.example.org
                    methods: [GET]
                deny:
                  - host: nohead.example.org
                    methods: [HEAD]
                  - host: private.example.org
                    methods: [GET]
            deny:
              - host: get.example.org
                paths: ["/admin/**"]
                methods: [GET]
            """);

    /** HEAD goes wherever GET goes, in allow and deny rules, unless a deny rule names HEAD. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            GET rule allows GET                    | http://get.example.org/a           | GET    | ALLOW | ALLOWLISTED        | extensions.reader.allow[0]
            GET rule allows HEAD                   | http://get.example.org/a           | HEAD   | ALLOW | ALLOWLISTED        | extensions.reader.allow[0]
            GET rule does not allow POST           | http://get.example.org/a           | POST   | DENY  | METHOD_NOT_ALLOWED | extensions.reader.allow[0]
            POST rule does not allow HEAD          | http://post.example.org/a          | HEAD   | DENY  | METHOD_NOT_ALLOWED | extensions.reader.allow[1]
            deny naming HEAD takes it back         | http://nohead.example.org/a        | HEAD   | DENY  | DENIED_BY_RULE     | extensions.reader.deny[0]
            deny naming HEAD spares GET            | http://nohead.example.org/a        | GET    | ALLOW | ALLOWLISTED        | extensions.reader.allow[2]
            deny of GET denies HEAD too            | http://private.example.org/a       | HEAD   | DENY  | DENIED_BY_RULE     | extensions.reader.deny[1]
            global deny of GET denies HEAD         | http://get.example.org/admin/x     | HEAD   | DENY  | DENIED_BY_RULE     | deny[0]
            global deny of GET spares other paths  | http://get.example.org/public      | HEAD   | ALLOW | ALLOWLISTED        | extensions.reader.allow[0]
            deny of GET denies lowercase get       | http://private.example.org/a       | get    | DENY  | DENIED_BY_RULE     | extensions.reader.deny[1]
            deny of HEAD denies mixed-case Head    | http://nohead.example.org/a        | Head   | DENY  | DENIED_BY_RULE     | extensions.reader.deny[0]
            allow of GET is exact: get is another  | http://get.example.org/a           | get    | DENY  | METHOD_NOT_ALLOWED | extensions.reader.allow[0]
            global deny of a path, encoded letter  | http://get.example.org/%61dmin/x   | GET    | DENY  | DENIED_BY_RULE     | deny[0]
            global deny of a path, double slash    | http://get.example.org//admin/x    | GET    | DENY  | DENIED_BY_RULE     | deny[0]
            global deny of a path, parameters      | http://get.example.org/admin;a=b/x | GET    | DENY  | DENIED_BY_RULE     | deny[0]
            global deny of a path, letter case     | http://get.example.org/ADMIN/x     | GET    | DENY  | DENIED_BY_RULE     | deny[0]
            """)
    void headFollowsGet(String scenario, String target, String method, Verdict verdict, Reason reason, String ruleId)
            throws Exception {
        Decision d = decide(HEAD_POLICY, "reader", target, method);
        assertThat(d.verdict()).as("verdict").isEqualTo(verdict);
        assertThat(d.reason()).as("reason").isEqualTo(reason);
        assertThat(d.ruleId()).as("rule id").isEqualTo(ruleId);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            allow stays allow                | github | api.github.com:443                   | -      | ALLOW      | ALLOWLISTED        | extensions.github.allow[0]
            miss would deny                  | github | example.net:443                      | -      | WOULD_DENY | NOT_ALLOWLISTED    | implicit-deny
            port miss would deny             | github | api.github.com:22                    | -      | WOULD_DENY | PORT_NOT_ALLOWED   | extensions.github.allow[0]
            deny rule would deny             | other  | blocked.test:443                     | -      | WOULD_DENY | DENIED_BY_RULE     | deny[0]
            method miss would deny           | github | http://registry.example.org/@scope/a   | POST   | WOULD_DENY | METHOD_NOT_ALLOWED | extensions.github.allow[3]
            path miss would deny             | github | http://registry.example.org/x          | GET    | WOULD_DENY | PATH_NOT_ALLOWED   | extensions.github.allow[3]
            """)
    void report(String scenario, String extension, String target, String method, Verdict verdict, Reason reason,
                String ruleId) throws Exception {
        Decision d = decide(REPORT, extension, target, method);
        assertThat(d.verdict()).as("verdict").isEqualTo(verdict);
        assertThat(d.reason()).as("reason").isEqualTo(reason);
        assertThat(d.ruleId()).as("rule id").isEqualTo(ruleId);
        assertThat(d.permits()).isTrue();
    }

    // ---- checkAddresses ----

    static final Policy NET = load("""
            version: 1
            extensions:
              x:
                allow:
                  - host: "*.test"
                    ports: [443, 3128, 3129]
                  - cidr: 0.0.0.0/0
                  - cidr: ::/0
            network:
              allow_private: ["10.1.2.0/24", "169.254.0.0/16", "127.0.0.0/8", "0.0.0.0/32", "fd00::/8"]
            """);
    static final Policy NET_REPORT = load("""
            version: 1
            mode: report
            extensions:
              x:
                allow: []
            """);
    static final SelfEndpoints SELF = new SelfEndpoints(
            List.of(new InetSocketAddress(IpAddresses.parseStrict("0.0.0.0"), 3128)),
            Set.of(IpAddresses.parseStrict("127.0.0.1"), IpAddresses.parseStrict("10.1.2.3")));

    static List<InetAddress> addresses(String csv) {
        List<InetAddress> out = new ArrayList<>();
        if (csv == null) {
            return out;
        }
        for (String s : csv.split(" ")) {
            out.add(IpAddresses.parseStrict(s));
        }
        return out;
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
            public answer dials first            | a.test:443  | 8.8.8.8 1.1.1.1          | ALLOW | ALLOWLISTED    | extensions.x.allow[0] | -           | 8.8.8.8
            no answers                           | a.test:443  | -                        | DENY  | DNS_FAILURE    | network.dns           | -           | -
            any private answer denies            | a.test:443  | 8.8.8.8 10.9.9.9         | DENY  | ADDRESS_CLASS  | network.address_class | PRIVATE     | -
            opted-in private answer              | a.test:443  | 10.1.2.9                 | ALLOW | ALLOWLISTED    | extensions.x.allow[0] | -           | 10.1.2.9
            opted-in mapped private answer       | a.test:443  | ::ffff:10.1.2.9          | ALLOW | ALLOWLISTED    | extensions.x.allow[0] | -           | ::ffff:10.1.2.9
            metadata never opted in              | a.test:443  | 169.254.169.254          | DENY  | ADDRESS_CLASS  | network.address_class | METADATA    | -
            link-local opted in                  | a.test:443  | 169.254.1.1              | ALLOW | ALLOWLISTED    | extensions.x.allow[0] | -           | 169.254.1.1
            unspecified never opted in           | a.test:443  | 0.0.0.0                  | DENY  | ADDRESS_CLASS  | network.address_class | UNSPECIFIED | -
            ula opted in, aws metadata not       | a.test:443  | fd00:ec2::254            | DENY  | ADDRESS_CLASS  | network.address_class | METADATA    | -
            cgnat                                | a.test:443  | 100.64.1.1               | DENY  | ADDRESS_CLASS  | network.address_class | CGNAT       | -
            nat64 of metadata                    | a.test:443  | 64:ff9b::a9fe:a9fe       | DENY  | ADDRESS_CLASS  | network.address_class | METADATA    | -
            6to4 public                          | a.test:443  | 2002:808:808::1          | DENY  | ADDRESS_CLASS  | network.address_class | EMBEDDED_IPV4 | -
            self loop beats opt-in               | a.test:3128 | 127.0.0.1                | DENY  | SELF_LOOP      | network.self          | -           | -
            self loop via local address          | a.test:3128 | 8.8.8.8 10.1.2.3         | DENY  | SELF_LOOP      | network.self          | -           | -
            loopback other port opted in         | a.test:3129 | 127.0.0.1                | ALLOW | ALLOWLISTED    | extensions.x.allow[0] | -           | 127.0.0.1
            ip literal target metadata           | 169.254.169.254:80 | 169.254.169.254   | DENY  | ADDRESS_CLASS  | network.address_class | METADATA    | -
            ip literal mapped loopback opted in  | [::ffff:127.0.0.1]:80 | ::ffff:127.0.0.1 | ALLOW | ALLOWLISTED | extensions.x.allow[1] | -           | ::ffff:127.0.0.1
            ip literal public v6                 | [2606:4700::1111]:443 | 2606:4700::1111 | ALLOW | ALLOWLISTED | extensions.x.allow[2] | -           | 2606:4700::1111
            """)
    void checkAddresses(String scenario, String target, String answers, Verdict verdict, Reason reason, String ruleId,
                        AddressClass addressClass, String dial) throws Exception {
        Target t = TargetParser.parseAuthority(target);
        Decision name = Decider.decide(NET, NET.extension("x").orElseThrow(), t, null);
        AddressDecision d = Decider.checkAddresses(NET, name, t, addresses(answers), SELF);
        assertThat(d.decision().verdict()).as("verdict").isEqualTo(verdict);
        assertThat(d.decision().reason()).as("reason").isEqualTo(reason);
        assertThat(d.decision().ruleId()).as("rule id").isEqualTo(ruleId);
        assertThat(d.decision().addressClass()).as("class").isEqualTo(addressClass);
        assertThat(d.dialAddress()).as("dial").isEqualTo(dial == null ? null : IpAddresses.parseStrict(dial));
        assertThat(d.answers()).hasSize(addresses(answers).size());
    }

    @Test
    void addressChecksAreEnforcedInReportMode() throws Exception {
        Target t = TargetParser.parseAuthority("a.test:443");
        Decision name = Decider.decide(NET_REPORT, NET_REPORT.extension("x").orElseThrow(), t, null);
        assertThat(name.verdict()).isEqualTo(Verdict.WOULD_DENY);
        AddressDecision d = Decider.checkAddresses(NET_REPORT, name, t, addresses("10.0.0.1"), SELF);
        assertThat(d.decision().verdict()).isEqualTo(Verdict.DENY);
        assertThat(d.decision().reasonText()).isEqualTo("address_class: private");
        AddressDecision ok = Decider.checkAddresses(NET_REPORT, name, t, addresses("8.8.8.8"), SELF);
        assertThat(ok.decision()).isEqualTo(name);
        assertThat(ok.dialAddress()).isEqualTo(IpAddresses.parseStrict("8.8.8.8"));
    }

    @Test
    void deniedNameDecisionIsReturnedUnchanged() throws Exception {
        Target t = TargetParser.parseAuthority("a.other:443");
        Decision name = Decider.decide(NET, NET.extension("x").orElseThrow(), t, null);
        assertThat(name.reason()).isEqualTo(Reason.NOT_ALLOWLISTED);
        AddressDecision d = Decider.checkAddresses(NET, name, t, addresses("8.8.8.8"), SELF);
        assertThat(d.decision()).isSameAs(name);
        assertThat(d.dialAddress()).isNull();
        assertThat(d.answers()).singleElement().satisfies(a -> assertThat(a.addressClass()).isEqualTo(AddressClass.PUBLIC));
    }

    @Test
    void classifiedAnswersCarryOptIn() throws Exception {
        Target t = TargetParser.parseAuthority("a.test:443");
        Decision name = Decider.decide(NET, NET.extension("x").orElseThrow(), t, null);
        AddressDecision d = Decider.checkAddresses(NET, name, t, addresses("10.1.2.3 169.254.169.254"), SELF);
        assertThat(d.answers()).extracting(AddressDecision.ClassifiedAddress::optedIn).containsExactly(true, false);
        assertThat(d.answers()).extracting(AddressDecision.ClassifiedAddress::addressClass)
                .containsExactly(AddressClass.PRIVATE, AddressClass.METADATA);
    }
}
