package dev.sluice.certs;

import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/** The JDK's default trust anchors: what its default TrustManagerFactory, given no KeyStore, trusts. */
final class SystemRoots {

    private SystemRoots() {
    }

    /**
     * Returns the certificates the JDK trusts by default ({@code lib/security/cacerts}, or the store
     * named by {@code javax.net.ssl.trustStore}).
     *
     * @throws GeneralSecurityException if the default store cannot be loaded
     */
    static List<X509Certificate> load() throws GeneralSecurityException {
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init((KeyStore) null);
        for (TrustManager tm : tmf.getTrustManagers()) {
            if (tm instanceof X509TrustManager) {
                return List.of(((X509TrustManager) tm).getAcceptedIssuers());
            }
        }
        throw new GeneralSecurityException("the default TrustManagerFactory has no X509TrustManager");
    }
}
