package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.nio.file.Path;
import java.security.Signature;
import java.security.cert.CertPath;
import java.security.cert.CertPathValidator;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Date;
import java.util.List;
import java.util.Set;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.x509.AuthorityKeyIdentifier;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.SubjectKeyIdentifier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LeafIssuerTest {

    @TempDir
    static Path dir;

    static LocalCa ca;
    static LeafIssuer issuer;

    @BeforeAll
    static void setUp() throws Exception {
        ca = LocalCa.create(dir);
        issuer = new LeafIssuer(ca);
    }

    @Test
    void leafHasSanValidityAndUsages() throws Exception {
        Instant before = Instant.now();
        X509Certificate[] chain = issuer.issue("api.anthropic.com");
        X509Certificate leaf = chain[0];

        assertThat(chain).hasSize(2);
        assertThat(chain[1]).isEqualTo(ca.certificate());
        assertThat(leaf.getSubjectAlternativeNames()).containsExactly(List.of(2, "api.anthropic.com"));
        assertThat(leaf.getSubjectX500Principal().getName()).isEqualTo("CN=api.anthropic.com");
        assertThat(leaf.getIssuerX500Principal()).isEqualTo(ca.certificate().getSubjectX500Principal());
        assertThat(leaf.getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1");
        assertThat(leaf.getKeyUsage()[0]).as("digitalSignature").isTrue();
        assertThat(leaf.getKeyUsage()[5]).as("keyCertSign").isFalse();
        assertThat(leaf.getBasicConstraints()).isEqualTo(-1);
        assertThat(leaf.getSerialNumber().signum()).isPositive();
        assertThat(leaf.getSerialNumber().bitLength()).isLessThanOrEqualTo(128);

        Instant notBefore = leaf.getNotBefore().toInstant();
        Instant notAfter = leaf.getNotAfter().toInstant();
        assertThat(notBefore).isBetween(before.minus(Duration.ofHours(1)).minusSeconds(1),
                Instant.now().minus(Duration.ofHours(1)));
        assertThat(Duration.between(notBefore, notAfter)).isEqualTo(Duration.ofDays(7).plusHours(1));

        byte[] aki = ASN1OctetString.getInstance(leaf.getExtensionValue(Extension.authorityKeyIdentifier.getId())).getOctets();
        byte[] caSki = ASN1OctetString.getInstance(ca.certificate().getExtensionValue(Extension.subjectKeyIdentifier.getId())).getOctets();
        assertThat(AuthorityKeyIdentifier.getInstance(aki).getKeyIdentifierObject().getOctets())
                .isEqualTo(SubjectKeyIdentifier.getInstance(caSki).getKeyIdentifier());
        assertThat(AuthorityKeyIdentifier.getInstance(aki).getAuthorityCertIssuer()).isNull();
        assertThat(AuthorityKeyIdentifier.getInstance(aki).getAuthorityCertSerialNumber()).isNull();
        assertThat(leaf.getExtensionValue(Extension.subjectKeyIdentifier.getId())).isNotNull();
    }

    @Test
    void chainValidatesAgainstTheCaWithPkix() throws Exception {
        X509Certificate[] chain = issuer.issue("api.openai.com");
        validate(chain[0], ca.certificate());
    }

    @Test
    void chainDoesNotValidateAgainstAnotherCa(@TempDir Path other) throws Exception {
        X509Certificate[] chain = issuer.issue("api.openai.com");
        X509Certificate otherCa = LocalCa.create(other).certificate();
        assertThatThrownBy(() -> validate(chain[0], otherCa)).isInstanceOf(CertPathValidatorException.class);
    }

    @Test
    void ipLiteralsGetIpAddressSans() throws Exception {
        X509Certificate v4 = issuer.issue("127.0.0.1")[0];
        assertThat(v4.getSubjectAlternativeNames()).containsExactly(List.of(7, "127.0.0.1"));
        X509Certificate v6 = issuer.issue("::1")[0];
        assertThat(v6.getSubjectAlternativeNames()).hasSize(1);
        List<?> san = v6.getSubjectAlternativeNames().iterator().next();
        assertThat(san.get(0)).isEqualTo(7);
        assertThat(InetAddress.getByName((String) san.get(1))).isEqualTo(InetAddress.getByName("::1"));
        validate(v4, ca.certificate());
        validate(v6, ca.certificate());
    }

    @Test
    void concurrentIssuanceProducesValidLeaves() throws Exception {
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            List<java.util.concurrent.Future<X509Certificate[]>> futures = new java.util.ArrayList<>();
            for (int i = 0; i < 200; i++) {
                String host = "p" + i + ".example";
                futures.add(pool.submit(() -> issuer.issue(host)));
            }
            byte[] expectedAki = issuer.issue("ref.example")[0].getExtensionValue(Extension.authorityKeyIdentifier.getId());
            java.util.Set<java.math.BigInteger> serials = new java.util.HashSet<>();
            for (int i = 0; i < futures.size(); i++) {
                X509Certificate leaf = futures.get(i).get()[0];
                assertThat(leaf.getSubjectAlternativeNames()).containsExactly(List.of(2, "p" + i + ".example"));
                assertThat(leaf.getExtensionValue(Extension.authorityKeyIdentifier.getId())).isEqualTo(expectedAki);
                validate(leaf, ca.certificate());
                serials.add(leaf.getSerialNumber());
            }
            assertThat(serials).hasSize(200);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void everyLeafSharesTheIssuersKey() throws Exception {
        X509Certificate a = issuer.issue("a.example")[0];
        X509Certificate b = issuer.issue("b.example")[0];
        assertThat(a.getPublicKey()).isEqualTo(b.getPublicKey());
        assertThat(a.getSerialNumber()).isNotEqualTo(b.getSerialNumber());
        Signature s = Signature.getInstance("SHA256withECDSA");
        s.initSign(issuer.leafKey());
        s.update(new byte[] {1, 2, 3});
        byte[] sig = s.sign();
        s.initVerify(a.getPublicKey());
        s.update(new byte[] {1, 2, 3});
        assertThat(s.verify(sig)).isTrue();
    }

    @Test
    void longNamesHaveTheCnTruncatedTo64ButTheFullSan() throws Exception {
        String host = "a".repeat(63) + "." + "b".repeat(63) + ".example";
        X509Certificate leaf = issuer.issue(host)[0];
        assertThat(leaf.getSubjectX500Principal().getName()).isEqualTo("CN=" + host.substring(0, 64));
        assertThat(leaf.getSubjectAlternativeNames()).containsExactly(List.of(2, host));
    }

    @Test
    void validityIsConfigurableButNeverOutlivesTheCa() throws Exception {
        Instant t = Instant.parse("2027-01-01T00:00:00Z");
        LeafIssuer custom = new LeafIssuer(ca, Duration.ofHours(48), Clock.fixed(t, ZoneOffset.UTC));
        X509Certificate leaf = custom.issue("x.example")[0];
        assertThat(leaf.getNotBefore().toInstant()).isEqualTo(t.minus(Duration.ofHours(1)));
        assertThat(leaf.getNotAfter().toInstant()).isEqualTo(t.plus(Duration.ofHours(48)));

        Instant late = ca.certificate().getNotAfter().toInstant().minus(Duration.ofDays(2));
        LeafIssuer nearEnd = new LeafIssuer(ca, Duration.ofDays(7), Clock.fixed(late, ZoneOffset.UTC));
        assertThat(nearEnd.issue("x.example")[0].getNotAfter()).isEqualTo(ca.certificate().getNotAfter());

        assertThatThrownBy(() -> new LeafIssuer(ca, Duration.ZERO, Clock.systemUTC()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("validity");
        assertThatThrownBy(() -> new LeafIssuer(ca, Duration.ofDays(398), Clock.systemUTC()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "api.example.com ", "*.example.com", "API.example.com", "example.com.",
            "a..b", "-a.example", "a-.example", "[::1]", "0:0:0:0:0:0:0:1", "::FFFF", "127.1", "127.0.0.01",
            "256.0.0.1", "1.2.3", "fe80::1%eth0", "exa mple.com", "ex\u00e4mple.com", "../etc/passwd",
            "::ffff:7f00:1"})
    void rejectsNonCanonicalHosts(String host) {
        assertThatThrownBy(() -> issuer.issue(host))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: canonical");
    }

    @Test
    void rejectionMessagesNameTheDefect() {
        assertThatThrownBy(() -> issuer.issue("*.example.com")).hasMessageContaining("wildcard");
        assertThatThrownBy(() -> issuer.issue("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> issuer.issue("a b")).hasMessageContaining("whitespace");
        assertThatThrownBy(() -> issuer.issue("2001:db8:0:0:0:0:0:1")).hasMessageContaining("2001:db8::1");
    }

    @Test
    void toStringMasksTheKey() {
        assertThat(issuer.toString()).contains("****");
    }

    static void validate(X509Certificate leaf, X509Certificate anchor) throws Exception {
        CertPath path = CertificateFactory.getInstance("X.509").generateCertPath(List.of(leaf));
        PKIXParameters params = new PKIXParameters(Set.of(new TrustAnchor(anchor, null)));
        params.setRevocationEnabled(false);
        params.setDate(new Date());
        CertPathValidator.getInstance("PKIX").validate(path, params);
    }
}
