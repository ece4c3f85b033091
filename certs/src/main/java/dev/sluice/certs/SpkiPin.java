package dev.sluice.certs;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.Objects;
import org.bouncycastle.asn1.ASN1Encoding;
import org.bouncycastle.asn1.x509.Certificate;

/**
 * SPKI pins in the form {@code sha256/<base64>}: the SHA-256 digest of a certificate's DER-encoded
 * SubjectPublicKeyInfo (RFC 5280 section 4.1.2.7), in standard padded base64 (RFC 4648 section 4), so
 * always 44 characters after the prefix. This is the digest of RFC 7469 (HPKP) section 2.4, written with
 * the {@code sha256/} prefix policy files use; the same value that {@code openssl x509 -pubkey | openssl
 * pkey -pubin -outform der | openssl dgst -sha256 -binary | base64} prints.
 *
 * <p>A pin names a key, not a certificate: a re-issued certificate for the same key keeps its pin.
 */
public final class SpkiPin {

    /** The prefix every pin starts with. */
    public static final String PREFIX = "sha256/";

    private static final int DIGEST_BYTES = 32;
    private static final int BASE64_CHARS = 44;

    private SpkiPin() {
    }

    /**
     * Returns the pin of {@code certificate}'s SubjectPublicKeyInfo, taken byte for byte from the
     * certificate's encoding (not re-encoded from a {@link java.security.PublicKey}).
     *
     * @throws IllegalArgumentException if the certificate cannot be encoded (a broken certificate object)
     */
    public static String of(X509Certificate certificate) {
        Objects.requireNonNull(certificate, "certificate");
        byte[] spki;
        try {
            spki = Certificate.getInstance(certificate.getEncoded()).getSubjectPublicKeyInfo()
                    .getEncoded(ASN1Encoding.DER);
        } catch (CertificateEncodingException | java.io.IOException e) {
            throw new IllegalArgumentException("certificate: cannot encode its SubjectPublicKeyInfo", e);
        }
        return ofSpki(spki);
    }

    /** Returns the pin of a DER-encoded SubjectPublicKeyInfo. */
    public static String ofSpki(byte[] subjectPublicKeyInfoDer) {
        Objects.requireNonNull(subjectPublicKeyInfoDer, "subjectPublicKeyInfoDer");
        return PREFIX + Base64.getEncoder().encodeToString(sha256(subjectPublicKeyInfoDer));
    }

    /**
     * Checks that {@code pin} is a well-formed SHA-256 SPKI pin and returns it unchanged.
     *
     * @throws IllegalArgumentException naming the defect, e.g.
     *     {@code "pin: 'sha1/...' (expected: sha256/ followed by 44 base64 characters)"}
     */
    public static String parse(String pin) {
        Objects.requireNonNull(pin, "pin");
        if (!pin.startsWith(PREFIX)) {
            throw bad(pin, "does not start with " + PREFIX);
        }
        String b64 = pin.substring(PREFIX.length());
        if (b64.length() != BASE64_CHARS) {
            throw bad(pin, b64.length() + " characters after " + PREFIX);
        }
        for (int i = 0; i < b64.length(); i++) {
            char c = b64.charAt(i);
            boolean ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '+' || c == '/' || (c == '=' && i == BASE64_CHARS - 1);
            if (!ok) {
                throw bad(pin, "character '" + c + "' at " + i
                        + " (standard base64 only, one '=' of padding at the end)");
            }
        }
        byte[] digest;
        try {
            digest = Base64.getDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw bad(pin, "invalid base64");
        }
        if (digest.length != DIGEST_BYTES) {
            throw bad(pin, digest.length + " bytes");
        }
        if (!Base64.getEncoder().encodeToString(digest).equals(b64)) {
            throw bad(pin, "non-canonical base64 (nonzero padding bits)");
        }
        return pin;
    }

    private static IllegalArgumentException bad(String pin, String what) {
        return new IllegalArgumentException("pin: '" + pin + "' " + what
                + " (expected: sha256/ followed by 44 base64 characters encoding 32 bytes)");
    }

    private static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required of every Java platform", e);
        }
    }
}
