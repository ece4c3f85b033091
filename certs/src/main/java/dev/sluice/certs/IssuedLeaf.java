package dev.sluice.certs;

import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.Objects;

/**
 * A leaf certificate ready to serve: the key and the chain {@code [leaf, CA]} in the order a TLS
 * Certificate message carries them (what {@code SslContextBuilder.forServer(key, chain)} takes).
 *
 * @param key the private key of the leaf (shared by all leaves of one {@link LeafIssuer})
 * @param chain leaf first, then the CA certificate; {@link #chain()} returns a copy
 */
public record IssuedLeaf(PrivateKey key, X509Certificate[] chain) {

    /** Checks the arguments and copies the chain. */
    public IssuedLeaf {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(chain, "chain");
        if (chain.length == 0) {
            throw new IllegalArgumentException("chain: empty (expected: leaf first)");
        }
        chain = chain.clone();
    }

    /** Returns a copy of the chain, leaf first. */
    @Override
    public X509Certificate[] chain() {
        return chain.clone();
    }

    /** Returns the leaf certificate. */
    public X509Certificate leaf() {
        return chain[0];
    }

    @Override
    public String toString() {
        return "IssuedLeaf{subject=" + chain[0].getSubjectX500Principal().getName() + ", serial="
                + chain[0].getSerialNumber().toString(16) + ", key=****}";
    }
}
