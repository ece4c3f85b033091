package dev.sluice.certs;

import dev.sluice.hosts.CanonicalHost;
import dev.sluice.certs.internal.HostnameMatcher;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathBuilder;
import java.security.cert.CertStore;
import java.security.cert.CertificateException;
import java.security.cert.CollectionCertStoreParameters;
import java.security.cert.PKIXBuilderParameters;
import java.security.cert.PKIXCertPathBuilderResult;
import java.security.cert.TrustAnchor;
import java.security.cert.X509CertSelector;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * Validation of upstream server chains: the JDK's PKIX trust manager over the system roots plus extra
 * trust anchors (policy {@code tls.extra_trust}, tests), then hostname verification, then the path
 * itself for pin checking.
 *
 * <ol>
 *   <li>PKIX: the chain goes to the {@code X509TrustManager} of a {@code TrustManagerFactory("PKIX")}
 *       initialised with a KeyStore of every anchor, which applies RFC 5280 path validation and the
 *       JDK's TLS server checks (extKeyUsage serverAuth, disabled algorithms, CA distrust policies).
 *       Revocation is not checked (the JDK default).</li>
 *   <li>Hostname: done here, explicitly, against the leaf's subjectAltName (see
 *       {@link dev.sluice.certs.internal.HostnameMatcher}: RFC 9525 rules, no CN fallback), never through
 *       an SSLEngine's endpoint identification algorithm, so it cannot be lost by an engine built
 *       without {@code SSLParameters.setEndpointIdentificationAlgorithm("HTTPS")}.</li>
 *   <li>Path: a {@link CertPathBuilder} builds the path from the leaf to an anchor with the same
 *       anchors and the certificates the server sent; pins are checked against it, anchor included,
 *       not against the possibly padded list the server sent.</li>
 * </ol>
 *
 * <p>Immutable and thread-safe. Loading the system store takes tens of milliseconds: build one per
 * policy load, not per connection.
 */
public final class UpstreamTrust {

    private static final String UNKNOWN_AUTH_TYPE = "UNKNOWN";

    private final List<X509Certificate> anchors;
    private final Set<TrustAnchor> trustAnchors;
    private final Set<X509Certificate> anchorSet;
    /** The anchors by subject, for the path builder's short list ({@link #anchorsFor}). */
    private final java.util.Map<javax.security.auth.x500.X500Principal, Set<TrustAnchor>> anchorsBySubject;
    private final X509TrustManager pkix;

    private UpstreamTrust(List<X509Certificate> anchors) throws GeneralSecurityException {
        this.anchors = List.copyOf(anchors);
        Set<TrustAnchor> ta = new HashSet<>();
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try {
            ks.load(null, null);
        } catch (java.io.IOException e) {
            throw new GeneralSecurityException("cannot create an empty KeyStore", e);
        }
        int i = 0;
        for (X509Certificate c : this.anchors) {
            ks.setCertificateEntry("anchor-" + i++, c);
            ta.add(new TrustAnchor(c, null));
        }
        if (ta.isEmpty()) {
            throw new GeneralSecurityException("no trust anchors (expected: system roots or extra anchors)");
        }
        this.trustAnchors = Set.copyOf(ta);
        this.anchorSet = new HashSet<>(this.anchors);
        java.util.Map<javax.security.auth.x500.X500Principal, Set<TrustAnchor>> bySubject = new java.util.HashMap<>();
        for (TrustAnchor anchor : this.trustAnchors) {
            bySubject.computeIfAbsent(anchor.getTrustedCert().getSubjectX500Principal(), k -> new HashSet<>()).add(anchor);
        }
        bySubject.replaceAll((k, v) -> Set.copyOf(v));
        this.anchorsBySubject = java.util.Map.copyOf(bySubject);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(ks);
        X509TrustManager found = null;
        for (TrustManager tm : tmf.getTrustManagers()) {
            if (tm instanceof X509TrustManager) {
                found = (X509TrustManager) tm;
                break;
            }
        }
        if (found == null) {
            throw new GeneralSecurityException("the PKIX TrustManagerFactory has no X509TrustManager");
        }
        this.pkix = found;
    }

    /**
     * Returns trust in the JDK's default roots plus {@code extraAnchors}.
     *
     * @throws GeneralSecurityException if the system store cannot be loaded
     */
    public static UpstreamTrust systemPlus(List<X509Certificate> extraAnchors) throws GeneralSecurityException {
        Objects.requireNonNull(extraAnchors, "extraAnchors");
        List<X509Certificate> all = new ArrayList<>(SystemRoots.load());
        all.addAll(extraAnchors);
        return new UpstreamTrust(all);
    }

    /**
     * Returns trust in {@code anchors} only, without the system roots (for tests and closed networks).
     *
     * @throws GeneralSecurityException if {@code anchors} is empty
     */
    public static UpstreamTrust only(List<X509Certificate> anchors) throws GeneralSecurityException {
        Objects.requireNonNull(anchors, "anchors");
        return new UpstreamTrust(anchors);
    }

    /** Returns every trust anchor (system roots first, then the extra ones). */
    public List<X509Certificate> anchors() {
        return anchors;
    }

    /**
     * Validates {@code chain} as the certificate list of a server for {@code host}.
     *
     * @param host canonical host the connection was made for
     * @param chain the server's certificates, leaf first
     * @param authType the key exchange algorithm as {@code X509TrustManager.checkServerTrusted} receives
     *     it, or {@code null} for "UNKNOWN" (TLS 1.3 style: no key-usage constraint from the cipher suite)
     * @return the validated path
     * @throws CertificateException if the chain does not validate to an anchor, or does not cover host
     */
    public ValidatedChain validate(String host, X509Certificate[] chain, String authType)
            throws CertificateException {
        Objects.requireNonNull(chain, "chain");
        if (chain.length == 0) {
            throw new CertificateException("empty certificate chain");
        }
        CanonicalHost h;
        try {
            h = CanonicalHost.of(Objects.requireNonNull(host, "host"));
        } catch (IllegalArgumentException e) {
            throw new CertificateException(e.getMessage(), e);
        }
        pkix.checkServerTrusted(chain.clone(), authType == null ? UNKNOWN_AUTH_TYPE : authType);
        HostnameMatcher.check(h, chain[0]);
        return buildPath(chain);
    }

    private ValidatedChain buildPath(X509Certificate[] chain) throws CertificateException {
        if (anchorSet.contains(chain[0])) {
            return new ValidatedChain(List.of(), chain[0]);
        }
        Set<TrustAnchor> candidates = anchorsFor(chain);
        if (candidates.isEmpty()) {
            throw new CertificateException("no certification path to a trust anchor: no anchor issued a "
                    + "certificate of the chain");
        }
        try {
            X509CertSelector target = new X509CertSelector();
            target.setCertificate(chain[0]);
            PKIXBuilderParameters params = new PKIXBuilderParameters(candidates, target);
            params.setRevocationEnabled(false);
            params.addCertStore(CertStore.getInstance("Collection",
                    new CollectionCertStoreParameters(Arrays.asList(chain))));
            PKIXCertPathBuilderResult result =
                    (PKIXCertPathBuilderResult) CertPathBuilder.getInstance("PKIX").build(params);
            List<X509Certificate> path = new ArrayList<>();
            result.getCertPath().getCertificates().forEach(c -> path.add((X509Certificate) c));
            return new ValidatedChain(path, result.getTrustAnchor().getTrustedCert());
        } catch (GeneralSecurityException e) {
            throw new CertificateException("no certification path to a trust anchor: " + e.getMessage(), e);
        }
    }

    /**
     * The anchors a path from {@code chain}'s leaf can end at: those whose subject is the issuer of a
     * certificate of the chain. A built path holds the leaf and certificates the server sent (the cert
     * store) and ends where its last certificate's issuer is an anchor, so no other anchor can end one;
     * handing the builder these few instead of every system root spares it indexing ~150 anchors (their
     * subjects and keys) on every upstream handshake.
     */
    private Set<TrustAnchor> anchorsFor(X509Certificate[] chain) {
        Set<TrustAnchor> out = new HashSet<>();
        for (X509Certificate c : chain) {
            Set<TrustAnchor> issuers = anchorsBySubject.get(c.getIssuerX500Principal());
            if (issuers != null) {
                out.addAll(issuers);
            }
        }
        return out;
    }
}
