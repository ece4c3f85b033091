package dev.sluice.certs;

import dev.sluice.certs.internal.Pem;
import java.security.GeneralSecurityException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * What {@code sluice ca export} prints: the CA certificate alone (for variables that add to a client's
 * trust, e.g. {@code NODE_EXTRA_CA_CERTS}, {@code GOOSE_CA_CERT_PATH}), or with {@code --bundle} a
 * bundle of the system roots followed by the CA (for variables that replace the trust store, e.g.
 * {@code SSL_CERT_FILE}, {@code REQUESTS_CA_BUNDLE}, {@code CURL_CA_BUNDLE}, {@code GIT_SSL_CAINFO}).
 * Both are concatenated PEM {@code CERTIFICATE} blocks (RFC 7468), without explanatory text, which every
 * PEM bundle reader accepts.
 */
public final class CaExport {

    private final X509Certificate ca;
    private final List<X509Certificate> systemRoots;

    /**
     * Creates an export of {@code ca} with the JDK's default trust anchors as the system roots.
     *
     * @throws GeneralSecurityException if the system trust store cannot be loaded
     */
    public CaExport(LocalCa ca) throws GeneralSecurityException {
        this(Objects.requireNonNull(ca, "ca").certificate(), SystemRoots.load());
    }

    /** Creates an export of {@code ca} with the given system roots. */
    public CaExport(X509Certificate ca, List<X509Certificate> systemRoots) {
        this.ca = Objects.requireNonNull(ca, "ca");
        this.systemRoots = List.copyOf(systemRoots);
    }

    /** Returns the CA certificate as one PEM block. */
    public String caPem() {
        return pem(ca);
    }

    /**
     * Returns every system root as PEM, in the trust store's order without duplicates, followed by the CA
     * (once, last, even if the system store already trusts it).
     */
    public String bundlePem() {
        Set<X509Certificate> roots = new LinkedHashSet<>(systemRoots);
        roots.remove(ca);
        StringBuilder sb = new StringBuilder(roots.size() * 2048);
        for (X509Certificate c : roots) {
            sb.append(pem(c));
        }
        return sb.append(pem(ca)).toString();
    }

    /** Returns how many system roots the bundle holds before the CA. */
    public int systemRootCount() {
        Set<X509Certificate> roots = new LinkedHashSet<>(systemRoots);
        roots.remove(ca);
        return roots.size();
    }

    private static String pem(X509Certificate c) {
        try {
            return Pem.encode(Pem.CERTIFICATE, c.getEncoded());
        } catch (CertificateEncodingException e) {
            throw new IllegalStateException("a parsed certificate cannot be re-encoded", e);
        }
    }
}
