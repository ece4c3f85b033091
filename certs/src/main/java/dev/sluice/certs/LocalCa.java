package dev.sluice.certs;

import dev.sluice.certs.internal.AtomicFiles;
import dev.sluice.certs.internal.Pem;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Set;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;

/**
 * Sluice's local certificate authority: the key and self-signed certificate that sign the leaf
 * certificates presented to downstream clients of inspected hosts.
 *
 * <p>Files in the data directory:
 * <ul>
 *   <li>{@value #KEY_FILE} — the private key, unencrypted PKCS #8 in PEM ({@code PRIVATE KEY}, RFC 7468
 *       section 10), mode {@code 0600};</li>
 *   <li>{@value #CERT_FILE} — the certificate, PEM ({@code CERTIFICATE}, RFC 7468 section 5), mode
 *       {@code 0644}.</li>
 * </ul>
 * Both are written atomically (temporary file with the final mode, fsync, link or rename), so a reader
 * never sees a half-written file and the key is never readable with looser permissions.
 *
 * <p>A new CA (RFC 5280 profile): ECDSA P-256 key, SHA-256 with ECDSA signature, subject and issuer
 * {@code CN=Sluice local CA <8 hex digits>, O=Sluice}, random positive 128-bit serial, valid from one
 * hour ago for ten years, basicConstraints {@code CA:true, pathLen:0} (critical), keyUsage
 * {@code keyCertSign, cRLSign} (critical), subjectKeyIdentifier (the SHA-1 of the public key bits,
 * method 1 of RFC 5280 section 4.2.1.2). A loaded CA may also be RSA (for an operator-supplied CA).
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class LocalCa {

    /** The private key file's name in the data directory. */
    public static final String KEY_FILE = "ca.key.pem";
    /** The certificate file's name in the data directory. */
    public static final String CERT_FILE = "ca.crt.pem";
    /** Validity of a new CA certificate. */
    public static final Duration VALIDITY = Duration.ofDays(3650);

    private static final Duration BACKDATE = Duration.ofHours(1);
    private static final Set<PosixFilePermission> GROUP_OR_OTHERS = Set.of(
            PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);

    private final X509Certificate certificate;
    private final PrivateKey privateKey;
    private final Path directory;
    private final String certificatePem;
    private final String spkiPin;

    private LocalCa(X509Certificate certificate, PrivateKey privateKey, Path directory) {
        this.certificate = certificate;
        this.privateKey = privateKey;
        this.directory = directory;
        this.certificatePem = pemOf(certificate);
        this.spkiPin = SpkiPin.of(certificate);
    }

    /**
     * Loads the CA from {@code dataDir}, creating the directory (mode {@code 0700}) and a new CA when
     * neither CA file exists. This is what {@code sluice run} does at start.
     *
     * @throws CaKeyPermissionsException if the key file grants group or others any access
     * @throws CaException if only one of the two files exists, if a file is unreadable or malformed, if
     *     the key does not match the certificate, or if the certificate is not a CA or not valid now
     */
    public static LocalCa loadOrCreate(Path dataDir) throws CaException {
        Objects.requireNonNull(dataDir, "dataDir");
        createDataDir(dataDir);
        if (!Files.exists(dataDir.resolve(KEY_FILE)) && !Files.exists(dataDir.resolve(CERT_FILE))) {
            try {
                return create(dataDir, false);
            } catch (CaAlreadyExistsException raced) {
                // another process created it between our check and our write: use theirs
            }
        }
        return load(dataDir);
    }

    /**
     * Loads an existing CA from {@code dataDir}; never creates one (for {@code sluice ca show|export}).
     *
     * @throws CaKeyPermissionsException if the key file grants group or others any access
     * @throws CaException as {@link #loadOrCreate(Path)}, and when the files do not exist
     */
    public static LocalCa load(Path dataDir) throws CaException {
        Objects.requireNonNull(dataDir, "dataDir");
        Path keyFile = dataDir.resolve(KEY_FILE);
        Path certFile = dataDir.resolve(CERT_FILE);
        boolean hasKey = Files.exists(keyFile);
        boolean hasCert = Files.exists(certFile);
        if (!hasKey && !hasCert) {
            throw new CaException(dataDir + ": no CA (expected: " + KEY_FILE + " and " + CERT_FILE
                    + "; create one with 'sluice ca init')");
        }
        if (!hasKey || !hasCert) {
            throw new CaException(dataDir + ": incomplete CA, " + (hasKey ? CERT_FILE : KEY_FILE)
                    + " is missing (expected: both " + KEY_FILE + " and " + CERT_FILE
                    + "; create a new CA with 'sluice ca init --force')");
        }
        checkKeyPermissions(keyFile);
        PrivateKey key = readKey(keyFile);
        X509Certificate cert = readCertificate(certFile);
        checkUsable(cert, certFile);
        checkMatch(key, cert, keyFile, certFile);
        return new LocalCa(cert, key, dataDir);
    }

    /**
     * Creates a new CA in {@code dataDir} ({@code sluice ca init}), refusing to replace an existing one.
     *
     * @throws CaAlreadyExistsException if either CA file exists
     * @throws CaException if the files cannot be written
     */
    public static LocalCa create(Path dataDir) throws CaException {
        return create(dataDir, false);
    }

    /**
     * Creates a new CA in {@code dataDir}. With {@code force}, existing CA files are replaced, each in one
     * atomic rename (key first, then certificate; a crash between the two leaves a pair that
     * {@link #load(Path)} reports as not matching). Recorded pins are not touched.
     *
     * @throws CaAlreadyExistsException if either CA file exists and {@code force} is false
     * @throws CaException if the files cannot be written
     */
    public static LocalCa create(Path dataDir, boolean force) throws CaException {
        Objects.requireNonNull(dataDir, "dataDir");
        createDataDir(dataDir);
        Path keyFile = dataDir.resolve(KEY_FILE);
        Path certFile = dataDir.resolve(CERT_FILE);
        if (!force) {
            if (Files.exists(keyFile)) {
                throw new CaAlreadyExistsException(keyFile);
            }
            if (Files.exists(certFile)) {
                throw new CaAlreadyExistsException(certFile);
            }
        }
        KeyPair keys;
        X509Certificate cert;
        try {
            keys = newKeyPair();
            cert = selfSign(keys, new SecureRandom());
        } catch (GeneralSecurityException e) {
            throw new CaException("cannot generate the CA key or certificate", e);
        }
        byte[] keyPem = Pem.encode(Pem.PRIVATE_KEY, keys.getPrivate().getEncoded()).getBytes(StandardCharsets.US_ASCII);
        byte[] certPem = pemOf(cert).getBytes(StandardCharsets.US_ASCII);
        try {
            if (force) {
                AtomicFiles.replace(keyFile, keyPem, AtomicFiles.OWNER_ONLY);
                AtomicFiles.replace(certFile, certPem, AtomicFiles.PUBLIC_READ);
            } else {
                if (!AtomicFiles.writeNew(keyFile, keyPem, AtomicFiles.OWNER_ONLY)) {
                    throw new CaAlreadyExistsException(keyFile);
                }
                if (!AtomicFiles.writeNew(certFile, certPem, AtomicFiles.PUBLIC_READ)) {
                    AtomicFiles.delete(keyFile);
                    throw new CaAlreadyExistsException(certFile);
                }
            }
        } catch (IOException e) {
            throw new CaException(dataDir + ": cannot write the CA files: " + e.getMessage(), e);
        }
        return new LocalCa(cert, keys.getPrivate(), dataDir);
    }

    /** Returns the CA certificate. */
    public X509Certificate certificate() {
        return certificate;
    }

    /** Returns the CA certificate as one PEM block (RFC 7468), ending in a newline. */
    public String certificatePem() {
        return certificatePem;
    }

    /** Returns the CA's SPKI pin ({@link SpkiPin} format). */
    public String spkiPin() {
        return spkiPin;
    }

    /** Returns the path of the certificate file (what {@code NODE_EXTRA_CA_CERTS} can point at). */
    public Path certificateFile() {
        return directory.resolve(CERT_FILE);
    }

    /** The private key; only the leaf issuer of this package sees it. */
    PrivateKey privateKey() {
        return privateKey;
    }

    @Override
    public String toString() {
        return "LocalCa{subject=" + certificate.getSubjectX500Principal().getName() + ", pin=" + spkiPin
                + ", key=****}";
    }

    private static void createDataDir(Path dataDir) throws CaException {
        try {
            AtomicFiles.createPrivateDirectories(dataDir);
        } catch (IOException e) {
            throw new CaException(dataDir + ": cannot create the data directory: " + e.getMessage(), e);
        }
    }

    private static KeyPair newKeyPair() throws GeneralSecurityException {
        KeyPairGenerator gen = KeyPairGenerator.getInstance("EC");
        gen.initialize(new ECGenParameterSpec("secp256r1"));
        return gen.generateKeyPair();
    }

    private static X509Certificate selfSign(KeyPair keys, SecureRandom random) throws GeneralSecurityException {
        byte[] id = new byte[4];
        random.nextBytes(id);
        X500Name name = new X500NameBuilder(BCStyle.INSTANCE)
                .addRDN(BCStyle.CN, "Sluice local CA " + HexFormat.of().formatHex(id))
                .addRDN(BCStyle.O, "Sluice")
                .build();
        Instant now = Instant.now();
        try {
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name,
                    CertSupport.randomSerial(random), Date.from(now.minus(BACKDATE)), Date.from(now.plus(VALIDITY)),
                    name, keys.getPublic())
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            new JcaX509ExtensionUtils().createSubjectKeyIdentifier(keys.getPublic()));
            return CertSupport.sign(builder, keys.getPrivate());
        } catch (IOException e) {
            throw new CertificateException("cannot encode the CA certificate", e);
        }
    }

    private static void checkKeyPermissions(Path keyFile) throws CaException {
        Set<PosixFilePermission> perms;
        try {
            perms = Files.readAttributes(keyFile, PosixFileAttributes.class).permissions();
        } catch (UnsupportedOperationException e) {
            throw new CaException(keyFile + ": the file system has no POSIX permissions, so the key's "
                    + "privacy cannot be checked (expected: a POSIX file system)", e);
        } catch (IOException e) {
            throw new CaException(keyFile + ": cannot read attributes: " + e.getMessage(), e);
        }
        for (PosixFilePermission p : perms) {
            if (GROUP_OR_OTHERS.contains(p)) {
                throw new CaKeyPermissionsException(keyFile, perms);
            }
        }
    }

    private static PrivateKey readKey(Path keyFile) throws CaException {
        try {
            String text = Files.readString(keyFile, StandardCharsets.US_ASCII);
            byte[] der = Pem.decodeOne(text, Pem.PRIVATE_KEY);
            String oid = PrivateKeyInfo.getInstance(der).getPrivateKeyAlgorithm().getAlgorithm().getId();
            String algorithm;
            if (oid.equals("1.2.840.10045.2.1")) {
                algorithm = "EC";
            } else if (oid.equals("1.2.840.113549.1.1.1")) {
                algorithm = "RSA";
            } else {
                throw new CaException(keyFile + ": key algorithm " + oid + " (expected: EC or RSA)");
            }
            return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
        } catch (IOException e) {
            throw new CaException(keyFile + ": cannot read: " + e.getMessage(), e);
        } catch (IllegalArgumentException | GeneralSecurityException e) {
            throw new CaException(keyFile + ": not an unencrypted PKCS #8 PEM private key ("
                    + e.getMessage() + "; convert an 'EC PRIVATE KEY' or 'RSA PRIVATE KEY' with "
                    + "'openssl pkcs8 -topk8 -nocrypt')", e);
        }
    }

    private static X509Certificate readCertificate(Path certFile) throws CaException {
        try {
            String text = Files.readString(certFile, StandardCharsets.US_ASCII);
            byte[] der = Pem.decodeOne(text, Pem.CERTIFICATE);
            return (X509Certificate) CertificateFactory.getInstance("X.509")
                    .generateCertificate(new ByteArrayInputStream(der));
        } catch (IOException e) {
            throw new CaException(certFile + ": cannot read: " + e.getMessage(), e);
        } catch (IllegalArgumentException | CertificateException e) {
            throw new CaException(certFile + ": not a PEM X.509 certificate (" + e.getMessage() + ")", e);
        }
    }

    private static void checkUsable(X509Certificate cert, Path certFile) throws CaException {
        if (cert.getBasicConstraints() < 0) {
            throw new CaException(certFile + ": not a CA certificate (basicConstraints CA:false or absent)");
        }
        boolean[] ku = cert.getKeyUsage();
        if (ku != null && (ku.length <= 5 || !ku[5])) {
            throw new CaException(certFile + ": keyUsage lacks keyCertSign");
        }
        try {
            cert.checkValidity();
        } catch (CertificateExpiredException | CertificateNotYetValidException e) {
            throw new CaException(certFile + ": not valid now (valid " + cert.getNotBefore().toInstant()
                    + " to " + cert.getNotAfter().toInstant() + "; create a new CA with "
                    + "'sluice ca init --force')", e);
        }
    }

    private static void checkMatch(PrivateKey key, X509Certificate cert, Path keyFile, Path certFile)
            throws CaException {
        byte[] challenge = new byte[32];
        new SecureRandom().nextBytes(challenge);
        boolean ok;
        try {
            String alg = CertSupport.signatureAlgorithm(key);
            Signature signer = Signature.getInstance(alg);
            signer.initSign(key);
            signer.update(challenge);
            byte[] sig = signer.sign();
            Signature verifier = Signature.getInstance(alg);
            verifier.initVerify(cert.getPublicKey());
            verifier.update(challenge);
            ok = verifier.verify(sig);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            ok = false;
        }
        if (!ok) {
            throw new CaException(keyFile + " does not match " + certFile
                    + " (the key cannot sign for the certificate's public key; create a new CA with "
                    + "'sluice ca init --force')");
        }
    }

    private static String pemOf(X509Certificate cert) {
        try {
            return Pem.encode(Pem.CERTIFICATE, cert.getEncoded());
        } catch (java.security.cert.CertificateEncodingException e) {
            throw new IllegalStateException("a parsed certificate cannot be re-encoded", e);
        }
    }
}
