package dev.sluice.certs;

import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A certification path that passed PKIX validation (RFC 5280 section 6): the certificates from the leaf
 * up to, not including, the trust anchor, and the anchor. When the leaf itself is a trust anchor, the
 * path is empty and the anchor is the leaf.
 *
 * @param path leaf first, then intermediates in issuing order
 * @param anchor the trust anchor's certificate
 */
public record ValidatedChain(List<X509Certificate> path, X509Certificate anchor) {

    /** Checks the arguments and copies the list. */
    public ValidatedChain {
        path = List.copyOf(path);
        Objects.requireNonNull(anchor, "anchor");
    }

    /** Returns the SPKI pins of every certificate, leaf first, anchor last. */
    public List<String> spkiPins() {
        List<String> out = new ArrayList<>(path.size() + 1);
        path.forEach(c -> out.add(SpkiPin.of(c)));
        out.add(SpkiPin.of(anchor));
        return out;
    }

    /**
     * Returns the SPKI pins of the intermediates and the anchor (what trust on first use records: they
     * survive the leaf's routine re-keying), or of the anchor alone when the path has no intermediate.
     */
    public List<String> issuerPins() {
        List<String> out = new ArrayList<>(path.size());
        for (int i = 1; i < path.size(); i++) {
            out.add(SpkiPin.of(path.get(i)));
        }
        out.add(SpkiPin.of(anchor));
        return out;
    }
}
