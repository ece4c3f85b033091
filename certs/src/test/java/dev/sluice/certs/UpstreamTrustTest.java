package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The path {@link UpstreamTrust#validate} builds for pins, which the builder looks for among the anchors
 * that issued a certificate of the chain (not every system root): it still ends at the right anchor
 * when an intermediate is the anchor, when the server pads its list, among anchors that share a subject
 * name, and among the system roots.
 */
class UpstreamTrustTest {

    private static final String HOST = "api.trust.test";
    private static TestPki pki;
    private static TestPki twin;
    private static TestPki other;

    @BeforeAll
    static void pkis() throws Exception {
        pki = new TestPki("Test");
        twin = new TestPki("Test"); // same subject names, other keys
        other = new TestPki("Other");
    }

    @Test
    void thePathEndsAtTheRootThatIssuedTheChainAmongTheSystemRoots() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        ValidatedChain v = UpstreamTrust.systemPlus(List.of(other.root, pki.root)).validate(HOST, leaf.chain, null);
        assertThat(v.path()).containsExactly(leaf.chain[0], pki.intermediate);
        assertThat(v.anchor()).isEqualTo(pki.root);
    }

    @Test
    void anIntermediateAnchorEndsThePathThere() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        ValidatedChain v = UpstreamTrust.only(List.of(other.root, pki.intermediate)).validate(HOST, leaf.chain, null);
        assertThat(v.path()).containsExactly(leaf.chain[0]);
        assertThat(v.anchor()).isEqualTo(pki.intermediate);
    }

    @Test
    void ofAnchorsWithTheSameSubjectTheOneWhoseKeySignedIsTheAnchor() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        for (List<X509Certificate> anchors : List.of(List.of(twin.root, pki.root), List.of(pki.root, twin.root))) {
            ValidatedChain v = UpstreamTrust.only(anchors).validate(HOST, leaf.chain, null);
            assertThat(v.anchor()).isEqualTo(pki.root);
        }
        assertThatThrownBy(() -> UpstreamTrust.only(List.of(twin.root)).validate(HOST, leaf.chain, null))
                .isInstanceOf(CertificateException.class);
    }

    @Test
    void aPaddedListStillGivesThePathToTheIssuingRoot() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        X509Certificate[] padded = {leaf.chain[0], other.intermediate, leaf.chain[1], other.root, pki.root};
        ValidatedChain v = UpstreamTrust.only(List.of(other.root, pki.root)).validate(HOST, padded, null);
        assertThat(v.path()).containsExactly(leaf.chain[0], pki.intermediate);
        assertThat(v.anchor()).isEqualTo(pki.root);
    }

    @Test
    void aChainNoAnchorIssuedIsRefused() throws Exception {
        TestPki.Leaf leaf = pki.leaf(HOST);
        assertThatThrownBy(() -> UpstreamTrust.only(List.of(other.root)).validate(HOST, leaf.chain, null))
                .isInstanceOf(CertificateException.class);
    }
}
