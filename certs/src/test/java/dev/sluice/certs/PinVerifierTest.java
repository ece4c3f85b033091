package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PinVerifierTest {

    static final String HOST = "api.example.com";

    static TestPki pki;
    static TestPki otherPki;
    static TestPki untrustedPki;
    static UpstreamTrust trust;

    @TempDir
    Path dir;

    PinStore store;
    final Map<String, PinPolicy> policies = new HashMap<>();
    PinVerifier verifier;

    @BeforeAll
    static void pkis() throws Exception {
        pki = new TestPki("Test");
        otherPki = new TestPki("Other");
        untrustedPki = new TestPki("Untrusted");
        trust = UpstreamTrust.systemPlus(List.of(pki.root, otherPki.root));
    }

    @BeforeEach
    void setUp() throws Exception {
        store = PinStore.open(dir);
        verifier = new PinVerifier(trust, h -> policies.getOrDefault(h, PinPolicy.none()), store);
    }

    @Test
    void trustIsTheSystemRootsPlusTheExtraAnchors() throws Exception {
        List<X509Certificate> system = UpstreamTrust.systemPlus(List.of()).anchors();
        assertThat(system).as("the JDK's cacerts").hasSizeGreaterThan(50);
        assertThat(trust.anchors()).hasSize(system.size() + 2).endsWith(pki.root, otherPki.root);
    }

    @Test
    void explicitPinOfAnyCertificateInThePathIsOk() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        for (X509Certificate pinned : new X509Certificate[] {pki.root, pki.intermediate, leaf.chain[0]}) {
            policies.put(HOST, PinPolicy.explicit(List.of(PinStoreTest.P3, SpkiPin.of(pinned)), PinMode.ENFORCE));
            PinCheck c = verifier.check(HOST, leaf.chain);
            assertThat(c.result()).isEqualTo(PinResult.OK);
            assertThat(c.chainPins()).containsExactly(SpkiPin.of(leaf.chain[0]), SpkiPin.of(pki.intermediate),
                    SpkiPin.of(pki.root));
        }
    }

    @Test
    void wrongPinInEnforceModeThrowsWithHostAndChainPins() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        policies.put(HOST, PinPolicy.explicit(List.of(SpkiPin.of(otherPki.root)), PinMode.ENFORCE));

        assertThatThrownBy(() -> verifier.check(HOST, leaf.chain))
                .isInstanceOfSatisfying(PinMismatchException.class, e -> {
                    assertThat(e.host()).isEqualTo(HOST);
                    assertThat(e.chainPins()).containsExactly(SpkiPin.of(leaf.chain[0]),
                            SpkiPin.of(pki.intermediate), SpkiPin.of(pki.root));
                    assertThat(e.expectedPins()).containsExactly(SpkiPin.of(otherPki.root));
                    assertThat(e).hasMessageStartingWith("pin_mismatch: " + HOST);
                });
        PinCheck evaluated = verifier.evaluate(HOST, leaf.chain, null);
        assertThat(evaluated.result()).isEqualTo(PinResult.MISMATCH);
        assertThat(evaluated.rejects()).isTrue();
    }

    @Test
    void wrongPinInReportModeReturnsMismatchWithoutThrowing() throws Exception {
        policies.put(HOST, PinPolicy.explicit(List.of(SpkiPin.of(otherPki.root)), PinMode.REPORT));
        PinCheck c = verifier.check(HOST, pki.leaf(HOST).chain);
        assertThat(c.result()).isEqualTo(PinResult.MISMATCH);
        assertThat(c.rejects()).isFalse();
    }

    @Test
    void pinsOnlyCountCertificatesOfTheValidatedPath() throws Exception {
        // The server pads its list with a certificate that is not on the path: its key must not pin.
        TestPki.Leaf leaf = pki.leaf(HOST);
        X509Certificate[] padded = {leaf.chain[0], leaf.chain[1], otherPki.root};
        policies.put(HOST, PinPolicy.explicit(List.of(SpkiPin.of(otherPki.root)), PinMode.REPORT));
        PinCheck c = verifier.check(HOST, padded);
        assertThat(c.result()).isEqualTo(PinResult.MISMATCH);
        assertThat(c.chainPins()).doesNotContain(SpkiPin.of(otherPki.root));
    }

    @Test
    void tofuRecordsIntermediateAndRootThenEnforces() throws Exception {
        policies.put(HOST, PinPolicy.tofu(PinMode.ENFORCE));

        PinCheck first = verifier.check(HOST, pki.leaf(HOST).chain);
        assertThat(first.result()).isEqualTo(PinResult.RECORDED);
        assertThat(store.pinsFor(HOST)).contains(List.of(SpkiPin.of(pki.intermediate), SpkiPin.of(pki.root)));

        // a re-keyed leaf from the same CA passes
        assertThat(verifier.check(HOST, pki.leaf(HOST).chain).result()).isEqualTo(PinResult.OK);

        // a chain from another CA, valid by PKIX, is rejected
        TestPki.Leaf other = otherPki.leaf(HOST);
        assertThatThrownBy(() -> verifier.check(HOST, other.chain)).isInstanceOf(PinMismatchException.class);

        // report mode lets it through as a mismatch; reset lets the next chain be recorded
        policies.put(HOST, PinPolicy.tofu(PinMode.REPORT));
        assertThat(verifier.check(HOST, other.chain).result()).isEqualTo(PinResult.MISMATCH);
        assertThat(store.reset(HOST)).isTrue();
        assertThat(verifier.check(HOST, other.chain).result()).isEqualTo(PinResult.RECORDED);
        assertThat(store.pinsFor(HOST)).contains(List.of(SpkiPin.of(otherPki.intermediate), SpkiPin.of(otherPki.root)));
    }

    @Test
    void tofuNeverRecordsAChainThatFailsValidation() throws Exception {
        policies.put(HOST, PinPolicy.tofu(PinMode.ENFORCE));
        assertThatThrownBy(() -> verifier.check(HOST, untrustedPki.leaf(HOST).chain))
                .isInstanceOf(CertificateException.class)
                .isNotInstanceOf(PinMismatchException.class);
        assertThatThrownBy(() -> verifier.check(HOST, pki.leaf("other.example.com").chain))
                .isInstanceOf(CertificateException.class)
                .hasMessageContaining("hostname mismatch");
        assertThat(store.pinsFor(HOST)).isEmpty();
    }

    @Test
    void hostsWithoutPinsAreValidatedOnly() throws Exception {
        assertThat(verifier.check(HOST, pki.leaf(HOST).chain).result()).isEqualTo(PinResult.NONE);
        assertThat(store.all()).isEmpty();
    }

    @Test
    void untrustedChainIsRejectedEvenWithAMatchingPin() throws Exception {
        TestPki.Leaf leaf = untrustedPki.leaf(HOST);
        policies.put(HOST, PinPolicy.explicit(List.of(SpkiPin.of(leaf.chain[0])), PinMode.REPORT));
        assertThatThrownBy(() -> verifier.check(HOST, leaf.chain))
                .isInstanceOf(CertificateException.class)
                .isNotInstanceOf(PinMismatchException.class);
    }

    @Test
    void hostnameMismatchIsRejectedEvenWithAMatchingPin() throws Exception {
        TestPki.Leaf leaf = pki.leaf("www.example.com", "example.com");
        policies.put(HOST, PinPolicy.explicit(List.of(SpkiPin.of(pki.root)), PinMode.REPORT));
        assertThatThrownBy(() -> verifier.check(HOST, leaf.chain))
                .isInstanceOf(CertificateException.class)
                .isNotInstanceOf(PinMismatchException.class)
                .hasMessageContaining("hostname mismatch")
                .hasMessageContaining("DNS:www.example.com")
                .hasMessageContaining(HOST);
    }

    @Test
    void hostnameRules() throws Exception {
        TestPki.Leaf wildcard = pki.leaf("*.example.com");
        assertThat(verifier.check("a.example.com", wildcard.chain).result()).isEqualTo(PinResult.NONE);
        assertThat(verifier.check("api.example.com", wildcard.chain).result()).isEqualTo(PinResult.NONE);
        for (String host : List.of("example.com", "a.b.example.com", "example.org")) {
            assertThatThrownBy(() -> verifier.check(host, wildcard.chain)).hasMessageContaining("hostname mismatch");
        }
        TestPki.Leaf upper = pki.leaf("API.Example.COM.");
        assertThat(verifier.check(HOST, upper.chain).result()).isEqualTo(PinResult.NONE);
        for (String bad : List.of("*.com", "a*.example.com", "*.*.example.com")) {
            TestPki.Leaf leaf = pki.leaf(bad);
            assertThatThrownBy(() -> verifier.check(HOST, leaf.chain)).hasMessageContaining("hostname mismatch");
        }
    }

    @Test
    void ipHostsMatchOnlyIpSans() throws Exception {
        TestPki.Leaf ip = pki.leaf("IP:127.0.0.1", "IP:::1");
        assertThat(verifier.check("127.0.0.1", ip.chain).result()).isEqualTo(PinResult.NONE);
        assertThat(verifier.check("::1", ip.chain).result()).isEqualTo(PinResult.NONE);
        assertThatThrownBy(() -> verifier.check("127.0.0.2", ip.chain)).hasMessageContaining("hostname mismatch");
        TestPki.Leaf dnsSpelling = pki.leaf("127.0.0.1");
        assertThatThrownBy(() -> verifier.check("127.0.0.1", dnsSpelling.chain))
                .hasMessageContaining("hostname mismatch");
    }

    @Test
    void expiredLeafIsRejected() throws Exception {
        Date start = Date.from(Instant.now().minus(Duration.ofDays(3)));
        Date end = Date.from(Instant.now().minus(Duration.ofDays(1)));
        TestPki.Leaf leaf = pki.leaf(start, end, HOST);
        assertThatThrownBy(() -> verifier.check(HOST, leaf.chain))
                .isInstanceOf(CertificateException.class).isNotInstanceOf(PinMismatchException.class);
    }

    @Test
    void sluiceIssuedLeafValidatesAndPinsToTheLocalCa(@TempDir Path data) throws Exception {
        LocalCa ca = LocalCa.create(data);
        X509Certificate[] chain = new LeafIssuer(ca).issue(HOST);
        PinVerifier v = new PinVerifier(UpstreamTrust.only(List.of(ca.certificate())),
                h -> PinPolicy.explicit(List.of(ca.spkiPin()), PinMode.ENFORCE), store);
        assertThat(v.check(HOST, chain).result()).isEqualTo(PinResult.OK);
        PinVerifier tofu = new PinVerifier(UpstreamTrust.only(List.of(ca.certificate())),
                h -> PinPolicy.tofu(PinMode.ENFORCE), store);
        assertThat(tofu.check(HOST, new X509Certificate[] {chain[0]}).result()).isEqualTo(PinResult.RECORDED);
        assertThat(store.pinsFor(HOST)).contains(List.of(ca.spkiPin()));
    }

    @Test
    void leafThatIsItselfAnAnchorPinsToItself() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        PinVerifier v = new PinVerifier(UpstreamTrust.only(List.of(leaf.chain[0])),
                h -> PinPolicy.tofu(PinMode.ENFORCE), store);
        PinCheck c = v.check(HOST, new X509Certificate[] {leaf.chain[0]});
        assertThat(c.result()).isEqualTo(PinResult.RECORDED);
        assertThat(c.chainPins()).containsExactly(SpkiPin.of(leaf.chain[0]));
    }

    @Test
    void policyRecordRejectsInconsistentArguments() {
        assertThatThrownBy(() -> PinPolicy.explicit(List.of(), PinMode.ENFORCE)).hasMessageContaining("empty");
        assertThatThrownBy(() -> PinPolicy.explicit(List.of("sha256/BASE64SPKI="), PinMode.ENFORCE))
                .hasMessageContaining("expected: sha256/");
        assertThatThrownBy(() -> new PinPolicy(PinPolicy.Kind.TOFU, List.of(PinStoreTest.P1), PinMode.ENFORCE))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void resultLabelsAreTheAuditWords() {
        List<String> labels = new ArrayList<>();
        for (PinResult r : PinResult.values()) {
            labels.add(r.label());
        }
        assertThat(labels).containsExactly("ok", "mismatch", "recorded", "none");
    }
}
