package dev.sluice.certs.internal;

import dev.sluice.hosts.CanonicalHost;
import java.io.IOException;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.bouncycastle.asn1.ASN1OctetString;
import org.bouncycastle.asn1.ASN1Primitive;
import org.bouncycastle.asn1.ASN1String;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;

/**
 * Server identity check against a certificate's subjectAltName, following RFC 9525 (which obsoletes
 * RFC 6125), section 6.3:
 * <ul>
 *   <li>an IP literal matches an iPAddress entry with the same 4 or 16 octets, never a dNSName;</li>
 *   <li>a DNS name matches a dNSName entry equal to it ignoring ASCII case and one trailing dot, or a
 *       wildcard entry {@code *.rest} where {@code *} is the whole leftmost label, {@code rest} has at
 *       least two labels, and {@code *} stands for exactly one non-empty label;</li>
 *   <li>the subject CN is never consulted (RFC 9525 section 6.3: only when no SAN exists, and then not
 *       by Sluice); a certificate without subjectAltName matches nothing.</li>
 * </ul>
 */
public final class HostnameMatcher {

    private HostnameMatcher() {
    }

    /**
     * Checks that {@code cert} is issued for {@code host}.
     *
     * @throws CertificateException naming the host and the SAN entries found, when it is not
     */
    public static void check(CanonicalHost host, X509Certificate cert) throws CertificateException {
        GeneralNames names = subjectAltNames(cert);
        List<String> seen = new ArrayList<>();
        if (names != null) {
            for (GeneralName n : names.getNames()) {
                if (n.getTagNo() == GeneralName.iPAddress) {
                    byte[] octets = ASN1OctetString.getInstance(n.getName()).getOctets();
                    seen.add("IP:" + Arrays.toString(octets));
                    if (host.isIp() && Arrays.equals(octets, host.address())) {
                        return;
                    }
                } else if (n.getTagNo() == GeneralName.dNSName) {
                    String pattern = ((ASN1String) n.getName()).getString();
                    seen.add("DNS:" + pattern);
                    if (!host.isIp() && dnsMatches(host.text(), pattern)) {
                        return;
                    }
                }
            }
        }
        throw new CertificateException("hostname mismatch: certificate for " + (seen.isEmpty()
                ? "no subjectAltName" : String.join(", ", seen)) + " does not cover " + host.text());
    }

    static boolean dnsMatches(String host, String pattern) {
        String p = pattern.toLowerCase(Locale.ROOT);
        if (p.endsWith(".")) {
            p = p.substring(0, p.length() - 1);
        }
        if (p.isEmpty()) {
            return false;
        }
        if (!p.contains("*")) {
            return p.equals(host);
        }
        if (!p.startsWith("*.") || p.indexOf('*', 1) >= 0) {
            return false; // partial-label or non-leftmost wildcards are not honoured
        }
        String rest = p.substring(2);
        if (rest.indexOf('.') < 0) {
            return false; // *.com and the like
        }
        int dot = host.indexOf('.');
        return dot > 0 && host.substring(dot + 1).equals(rest);
    }

    private static GeneralNames subjectAltNames(X509Certificate cert) throws CertificateException {
        byte[] ext = cert.getExtensionValue(Extension.subjectAlternativeName.getId());
        if (ext == null) {
            return null;
        }
        try {
            byte[] inner = ASN1OctetString.getInstance(ext).getOctets();
            return GeneralNames.getInstance(ASN1Primitive.fromByteArray(inner));
        } catch (IOException | IllegalArgumentException e) {
            throw new CertificateException("malformed subjectAltName", e);
        }
    }
}
