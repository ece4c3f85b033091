package dev.sluice.certs;

import java.math.BigInteger;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * What the CA and the leaf issuer share: serial numbers and signing. Bouncy Castle builds the ASN.1;
 * keys, signatures and certificate objects come from the JDK's providers (no provider is registered).
 */
final class CertSupport {

    private CertSupport() {
    }

    /**
     * Returns a random positive serial number of up to 128 bits (RFC 5280 section 4.1.2.2: positive, at
     * most 20 octets; CA/Browser Forum baseline: at least 64 bits of randomness).
     */
    static BigInteger randomSerial(SecureRandom random) {
        BigInteger serial;
        do {
            serial = new BigInteger(128, random);
        } while (serial.signum() <= 0);
        return serial;
    }

    /** Returns the signature algorithm Sluice uses with {@code key}: SHA-256 with ECDSA or RSA. */
    static String signatureAlgorithm(PrivateKey key) {
        switch (key.getAlgorithm()) {
            case "EC":
                return "SHA256withECDSA";
            case "RSA":
                return "SHA256withRSA";
            default:
                throw new IllegalArgumentException("key: algorithm " + key.getAlgorithm()
                        + " (expected: EC or RSA)");
        }
    }

    /** Signs {@code builder} with {@code key} and returns the certificate as a JDK object. */
    static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey key) throws CertificateException {
        try {
            ContentSigner signer = new JcaContentSignerBuilder(signatureAlgorithm(key)).build(key);
            X509CertificateHolder holder = builder.build(signer);
            return new JcaX509CertificateConverter().getCertificate(holder);
        } catch (OperatorCreationException e) {
            throw new CertificateException("cannot create a " + signatureAlgorithm(key) + " signer", e);
        }
    }
}
