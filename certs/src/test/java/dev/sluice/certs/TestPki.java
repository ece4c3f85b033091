package dev.sluice.certs;

import java.math.BigInteger;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.DEROctetString;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throwaway PKI for tests, built independently of the code under test: root CA → intermediate CA →
 * leaf, ECDSA P-256, valid from an hour ago for a day unless told otherwise.
 */
final class TestPki {

    final KeyPair rootKeys;
    final X509Certificate root;
    final KeyPair intermediateKeys;
    final X509Certificate intermediate;

    private static final SecureRandom RANDOM = new SecureRandom();

    TestPki(String name) throws Exception {
        rootKeys = keys();
        X500Name rootName = new X500Name("CN=" + name + " Root");
        root = sign(new JcaX509v3CertificateBuilder(rootName, serial(), past(), future(), rootName, rootKeys.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(1))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                .addExtension(Extension.subjectKeyIdentifier, false,
                        new JcaX509ExtensionUtils().createSubjectKeyIdentifier(rootKeys.getPublic())),
                rootKeys.getPrivate());
        intermediateKeys = keys();
        intermediate = sign(new JcaX509v3CertificateBuilder(root, serial(), past(), future(),
                new X500Name("CN=" + name + " Intermediate"), intermediateKeys.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                .addExtension(Extension.authorityKeyIdentifier, false,
                        new JcaX509ExtensionUtils().createAuthorityKeyIdentifier(root))
                .addExtension(Extension.subjectKeyIdentifier, false,
                        new JcaX509ExtensionUtils().createSubjectKeyIdentifier(intermediateKeys.getPublic())),
                rootKeys.getPrivate());
    }

    /** A leaf key pair and its chain [leaf, intermediate] (what a server sends). */
    static final class Leaf {
        final KeyPair keys;
        final X509Certificate[] chain;

        Leaf(KeyPair keys, X509Certificate[] chain) {
            this.keys = keys;
            this.chain = chain;
        }
    }

    Leaf leaf(String... sans) throws Exception {
        return leaf(past(), future(), sans);
    }

    Leaf leaf(Date notBefore, Date notAfter, String... sans) throws Exception {
        KeyPair k = keys();
        GeneralName[] names = new GeneralName[sans.length];
        for (int i = 0; i < sans.length; i++) {
            String s = sans[i];
            names[i] = s.startsWith("IP:")
                    ? new GeneralName(GeneralName.iPAddress,
                            new DEROctetString(java.net.InetAddress.getByName(s.substring(3)).getAddress()))
                    : new GeneralName(GeneralName.dNSName, s);
        }
        X509Certificate leaf = sign(new JcaX509v3CertificateBuilder(intermediate, serial(), notBefore, notAfter,
                new X500Name("CN=" + (sans.length > 0 ? sans[0].replace("IP:", "") : "nothing")), k.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(names)),
                intermediateKeys.getPrivate());
        return new Leaf(k, new X509Certificate[] {leaf, intermediate});
    }

    List<X509Certificate> anchors() {
        return List.of(root);
    }

    static Date past() {
        return Date.from(Instant.now().minus(Duration.ofHours(1)));
    }

    static Date future() {
        return Date.from(Instant.now().plus(Duration.ofDays(1)));
    }

    static KeyPair keys() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    private static BigInteger serial() {
        return new BigInteger(64, RANDOM).add(BigInteger.ONE);
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, PrivateKey key) throws Exception {
        return new JcaX509CertificateConverter().getCertificate(
                b.build(new JcaContentSignerBuilder("SHA256withECDSA").build(key)));
    }
}
