package dev.sluice.certs;

import dev.sluice.hosts.CanonicalHost;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.Objects;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.DEROctetString;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.AuthorityKeyIdentifier;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.x509.SubjectKeyIdentifier;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;

/**
 * Issues leaf (server) certificates for inspected hosts, signed by the {@link LocalCa}. All leaves share
 * one ECDSA P-256 key pair, generated when the issuer is constructed and never written to disk: a
 * restart makes a new one.
 *
 * <p>A leaf (RFC 5280 profile): subject {@code CN=<host>} (truncated to 64 characters, the upper bound
 * of RFC 5280 appendix A), issuer the CA's subject, random positive 128-bit serial, valid from one hour
 * before issuance (clock skew) until {@code validity} after it but never past the CA's own notAfter;
 * extensions: subjectAltName with one dNSName (a name) or iPAddress (an IPv4 or IPv6 literal, 4 or 16
 * octets), basicConstraints {@code CA:false} (critical), keyUsage {@code digitalSignature} (critical),
 * extKeyUsage {@code serverAuth}, authorityKeyIdentifier (keyIdentifier only: the CA's subjectKeyIdentifier),
 * subjectKeyIdentifier. Clients match the SAN (RFC 9525 / RFC 6125); the CN is only a label.
 *
 * <p>Issuance is CPU work (one ECDSA signature, about a millisecond or less): call it off any event loop, or
 * through {@link LeafCache}. Instances are thread-safe.
 */
public final class LeafIssuer {

    /** Default leaf validity: seven days. */
    public static final Duration DEFAULT_VALIDITY = Duration.ofDays(7);
    /** How far notBefore is set before issuance, for downstream clocks that run slow. */
    public static final Duration BACKDATE = Duration.ofHours(1);

    private static final int MAX_CN = 64;

    private final LocalCa ca;
    private final Duration validity;
    private final Clock clock;
    private final KeyPair leafKeys;
    // Both identifiers are the same for every leaf; computed once, since JcaX509ExtensionUtils holds a
    // MessageDigest and is not safe for concurrent use.
    private final AuthorityKeyIdentifier authorityKeyId;
    private final SubjectKeyIdentifier subjectKeyId;
    private final SecureRandom random = new SecureRandom();

    /** Creates an issuer with {@link #DEFAULT_VALIDITY} and the system clock. */
    public LeafIssuer(LocalCa ca) {
        this(ca, DEFAULT_VALIDITY, Clock.systemUTC());
    }

    /**
     * Creates an issuer.
     *
     * @param validity how long a leaf is valid after issuance (&gt; 0, at most 397 days, the CA/Browser
     *     Forum limit clients enforce)
     * @param clock the source of the issuance time
     * @throws IllegalArgumentException for a validity out of range
     * @throws IllegalStateException if the JDK cannot generate an EC P-256 key (it always can)
     */
    public LeafIssuer(LocalCa ca, Duration validity, Clock clock) {
        this.ca = Objects.requireNonNull(ca, "ca");
        this.validity = Objects.requireNonNull(validity, "validity");
        this.clock = Objects.requireNonNull(clock, "clock");
        if (validity.isNegative() || validity.isZero() || validity.compareTo(Duration.ofDays(397)) > 0) {
            throw new IllegalArgumentException("validity: " + validity + " (expected: > 0 and <= P397D)");
        }
        try {
            KeyPairGenerator gen = KeyPairGenerator.getInstance("EC");
            gen.initialize(new ECGenParameterSpec("secp256r1"), random);
            this.leafKeys = gen.generateKeyPair();
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            this.authorityKeyId = new AuthorityKeyIdentifier(caKeyIdentifier(ca.certificate(), extensions));
            this.subjectKeyId = extensions.createSubjectKeyIdentifier(leafKeys.getPublic());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot generate an EC P-256 key pair", e);
        }
    }

    /**
     * Issues a new leaf for {@code host}; every call signs a new certificate (see {@link LeafCache} for
     * reuse).
     *
     * @param host canonical host: a lowercase DNS name, a dotted-quad IPv4 literal or an RFC 5952 IPv6
     *     literal without brackets; no wildcard, no trailing dot, no whitespace
     * @return the chain {@code [leaf, CA certificate]}, a new array each call
     * @throws IllegalArgumentException if {@code host} is not canonical
     * @throws IllegalStateException if signing fails (a broken JDK security provider)
     */
    public X509Certificate[] issue(String host) {
        CanonicalHost h = CanonicalHost.of(host);
        Instant now = clock.instant();
        Instant notAfter = now.plus(validity);
        Instant caNotAfter = ca.certificate().getNotAfter().toInstant();
        if (notAfter.isAfter(caNotAfter)) {
            notAfter = caNotAfter;
        }
        String cn = host.length() > MAX_CN ? host.substring(0, MAX_CN) : host;
        GeneralName san = h.isIp()
                ? new GeneralName(GeneralName.iPAddress, new DEROctetString(h.address()))
                : new GeneralName(GeneralName.dNSName, host);
        try {
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(ca.certificate(),
                    CertSupport.randomSerial(random), Date.from(now.minus(BACKDATE)), Date.from(notAfter),
                    new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, cn).build(), leafKeys.getPublic())
                    .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(san))
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                    .addExtension(Extension.authorityKeyIdentifier, false, authorityKeyId)
                    .addExtension(Extension.subjectKeyIdentifier, false, subjectKeyId);
            X509Certificate leaf = CertSupport.sign(builder, ca.privateKey());
            return new X509Certificate[] {leaf, ca.certificate()};
        } catch (IOException | CertificateException e) {
            throw new IllegalStateException("cannot issue a leaf for " + host, e);
        }
    }

    /**
     * Returns the CA's subjectKeyIdentifier, or computes one (RFC 5280 section 4.2.1.2 method 1) for a
     * loaded CA without it. The AKI then holds only this keyIdentifier, not issuer name and serial (as
     * the CA/Browser Forum baseline requires of subscriber certificates).
     */
    private static byte[] caKeyIdentifier(X509Certificate caCert, JcaX509ExtensionUtils extensions) {
        byte[] ext = caCert.getExtensionValue(Extension.subjectKeyIdentifier.getId());
        if (ext != null) {
            return SubjectKeyIdentifier.getInstance(ASN1OctetString.getInstance(ext).getOctets()).getKeyIdentifier();
        }
        return extensions.createSubjectKeyIdentifier(caCert.getPublicKey()).getKeyIdentifier();
    }

    /** Returns the private key shared by every leaf this issuer signs. */
    public PrivateKey leafKey() {
        return leafKeys.getPrivate();
    }

    /** Returns the validity given to new leaves. */
    public Duration validity() {
        return validity;
    }

    @Override
    public String toString() {
        return "LeafIssuer{validity=" + validity + ", key=****}";
    }
}
