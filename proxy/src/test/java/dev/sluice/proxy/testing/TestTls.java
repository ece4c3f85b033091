package dev.sluice.proxy.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Writer;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
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
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A throwaway test CA and one server (leaf) certificate signed by it, for origins in integration
 * tests. Keys are ECDSA P-256; both certificates are valid from one hour ago until one day from now.
 *
 * <p>{@link #create(Path, String...)} writes into a directory:
 * <ul>
 *   <li>{@code server.p12} — PKCS12 keystore, password {@value #PASSWORD}, alias {@value #ALIAS}, holding
 *       the leaf key and the chain leaf → CA (for WireMock's HTTPS port);</li>
 *   <li>{@code ca.pem} — the CA certificate, PEM (for {@code curl --cacert});</li>
 * </ul>
 * and {@link #clientContext()} returns an {@link SSLContext} that trusts only this CA (for
 * {@link java.net.http.HttpClient}).
 *
 * <p>Uses Bouncy Castle only to build certificates; it registers no global security provider.
 */
public final class TestTls {

    /** Password of the keystore and of its key entry. */
    public static final String PASSWORD = "changeit";
    /** Alias of the key entry in the keystore. */
    public static final String ALIAS = "server";
    /** Names a leaf covers when none are given. */
    public static final List<String> DEFAULT_NAMES = List.of("origin.test", "localhost", "127.0.0.1", "::1");

    private static final String SIGNATURE = "SHA256withECDSA";

    private final X509Certificate caCertificate;
    private final X509Certificate serverCertificate;
    private final Path keystore;
    private final Path caPem;
    private final KeyStore trustStore;

    private TestTls(X509Certificate caCertificate, X509Certificate serverCertificate, Path keystore, Path caPem,
            KeyStore trustStore) {
        this.caCertificate = caCertificate;
        this.serverCertificate = serverCertificate;
        this.keystore = keystore;
        this.caPem = caPem;
        this.trustStore = trustStore;
    }

    /**
     * Creates a CA and a leaf for {@code names} and writes {@code server.p12} and {@code ca.pem} into
     * {@code dir} (created if missing).
     *
     * @param names DNS names and IP literals (IPv4 or IPv6) for the leaf's subjectAltName; none means
     *     {@link #DEFAULT_NAMES}. The first name is also the subject CN.
     * @throws IOException if the files cannot be written
     * @throws IllegalStateException if the JDK lacks EC key generation or PKCS12 (it never should)
     */
    public static TestTls create(Path dir, String... names) throws IOException {
        Objects.requireNonNull(dir, "dir");
        List<String> sans = names.length == 0 ? DEFAULT_NAMES : List.of(names);
        Files.createDirectories(dir);
        try {
            Instant now = Instant.now();
            Date notBefore = Date.from(now.minus(Duration.ofHours(1)));
            Date notAfter = Date.from(now.plus(Duration.ofDays(1)));
            JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();

            KeyPair caKeys = newKeyPair();
            X500Name caName = new X500Name("CN=Sluice Test CA " + serialNumber().toString(16).substring(0, 8));
            X509v3CertificateBuilder ca = new JcaX509v3CertificateBuilder(caName, serialNumber(), notBefore,
                    notAfter, caName, caKeys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            ext.createSubjectKeyIdentifier(caKeys.getPublic()));
            X509Certificate caCert = sign(ca, caKeys.getPrivate());

            KeyPair serverKeys = newKeyPair();
            X509v3CertificateBuilder leaf = new JcaX509v3CertificateBuilder(caCert, serialNumber(), notBefore,
                    notAfter, new X500Name("CN=" + sans.get(0)), serverKeys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false,
                            new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                    .addExtension(Extension.subjectAlternativeName, false, subjectAltNames(sans))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            ext.createSubjectKeyIdentifier(serverKeys.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false,
                            ext.createAuthorityKeyIdentifier(caCert));
            X509Certificate serverCert = sign(leaf, caKeys.getPrivate());

            Path keystore = dir.resolve("server.p12");
            KeyStore p12 = KeyStore.getInstance("PKCS12");
            p12.load(null, null);
            p12.setKeyEntry(ALIAS, serverKeys.getPrivate(), PASSWORD.toCharArray(),
                    new Certificate[] {serverCert, caCert});
            try (OutputStream out = Files.newOutputStream(keystore)) {
                p12.store(out, PASSWORD.toCharArray());
            }

            Path caPem = dir.resolve("ca.pem");
            try (Writer w = Files.newBufferedWriter(caPem, StandardCharsets.US_ASCII);
                    JcaPEMWriter pem = new JcaPEMWriter(w)) {
                pem.writeObject(caCert);
            }

            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            trust.setCertificateEntry("sluice-test-ca", caCert);
            return new TestTls(caCert, serverCert, keystore, caPem, trust);
        } catch (GeneralSecurityException | OperatorCreationException e) {
            throw new IllegalStateException("cannot create test certificates: " + e, e);
        }
    }

    /** Returns the PKCS12 keystore file (password {@value #PASSWORD}). */
    public Path keystore() {
        return keystore;
    }

    /** Returns the keystore and key password, {@value #PASSWORD}. */
    public String keystorePassword() {
        return PASSWORD;
    }

    /** Returns the CA certificate as a PEM file, e.g. for {@code curl --cacert}. */
    public Path caPem() {
        return caPem;
    }

    /** Returns the CA certificate. */
    public X509Certificate caCertificate() {
        return caCertificate;
    }

    /** Returns the server (leaf) certificate. */
    public X509Certificate serverCertificate() {
        return serverCertificate;
    }

    /** Returns the in-memory trust store holding only the CA (shared; do not modify it). */
    public KeyStore trustStore() {
        return trustStore;
    }

    /**
     * Returns a new client {@link SSLContext} that trusts only this CA (no system roots), for
     * {@code HttpClient.newBuilder().sslContext(...)}.
     */
    public SSLContext clientContext() {
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trustStore);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot build client SSLContext: " + e, e);
        }
    }

    private static KeyPair newKeyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        return generator.generateKeyPair();
    }

    private static BigInteger serialNumber() {
        return new BigInteger(64, new SecureRandom()).add(BigInteger.ONE);
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey issuerKey)
            throws OperatorCreationException, GeneralSecurityException {
        return new JcaX509CertificateConverter()
                .getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE).build(issuerKey)));
    }

    private static GeneralNames subjectAltNames(List<String> names) {
        List<GeneralName> out = new ArrayList<>();
        for (String name : names) {
            out.add(isIpLiteral(name)
                    ? new GeneralName(GeneralName.iPAddress, name) // Bouncy Castle parses v4 and v6 text
                    : new GeneralName(GeneralName.dNSName, name));
        }
        return new GeneralNames(out.toArray(new GeneralName[0]));
    }

    private static boolean isIpLiteral(String name) {
        return name.contains(":") || name.matches("\\d{1,3}(\\.\\d{1,3}){3}");
    }
}
