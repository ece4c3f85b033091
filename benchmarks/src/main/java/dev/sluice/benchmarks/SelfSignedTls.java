package dev.sluice.benchmarks;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * TLS material for the loopback origins and the load clients: a self-signed ECDSA P-256 certificate
 * generated at start (Bouncy Castle), valid for {@code 127.0.0.1}, {@code localhost} and
 * {@link #BENCH_HOST}, and client contexts that trust one PEM file.
 */
public final class SelfSignedTls {

    /** A host name the harness maps to 127.0.0.1 in Sluice's {@code network.hosts}; in the certificate's SANs. */
    public static final String BENCH_HOST = "llm.bench.test";

    private final PrivateKey key;
    private final X509Certificate certificate;

    private SelfSignedTls(PrivateKey key, X509Certificate certificate) {
        this.key = key;
        this.certificate = certificate;
    }

    /** Generates a fresh key pair and a one-day self-signed certificate (CA:true, so it can be a trust anchor). */
    public static SelfSignedTls generate() throws GeneralSecurityException, OperatorCreationException, IOException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair pair = generator.generateKeyPair();
        X500Name name = new X500Name("CN=sluice-bench-origin");
        Instant now = Instant.now();
        JcaX509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name,
                BigInteger.valueOf(now.toEpochMilli()), Date.from(now.minus(Duration.ofHours(1))),
                Date.from(now.plus(Duration.ofDays(1))), name, pair.getPublic());
        builder.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
            new GeneralName(GeneralName.iPAddress, "127.0.0.1"),
            new GeneralName(GeneralName.dNSName, "localhost"),
            new GeneralName(GeneralName.dNSName, BENCH_HOST),
        }));
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        X509Certificate cert = new JcaX509CertificateConverter().getCertificate(
                builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(pair.getPrivate())));
        return new SelfSignedTls(pair.getPrivate(), cert);
    }

    /** The private key of the certificate. */
    public PrivateKey key() {
        return key;
    }

    /** The self-signed certificate. */
    public X509Certificate certificate() {
        return certificate;
    }

    /** Writes the certificate as PEM to {@code path} (what clients pass as their CA file). */
    public void writeCertificate(Path path) throws IOException {
        StringWriter out = new StringWriter();
        try (JcaPEMWriter pem = new JcaPEMWriter(out)) {
            pem.writeObject(certificate);
        }
        Files.writeString(path, out.toString(), StandardCharsets.US_ASCII);
    }

    /**
     * A client SSLContext trusting every certificate in the PEM file {@code caFile} (one or more
     * certificates), and nothing else.
     */
    public static SSLContext clientContext(Path caFile) throws GeneralSecurityException, IOException {
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        int i = 0;
        try (var in = Files.newInputStream(caFile)) {
            for (var cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("ca" + i++, cert);
            }
        }
        if (i == 0) {
            throw new GeneralSecurityException("caFile: " + caFile + " (expected: at least one PEM certificate)");
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        return context;
    }
}
