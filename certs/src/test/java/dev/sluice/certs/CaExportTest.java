package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CaExportTest {

    @TempDir
    Path dir;

    @Test
    void caPemIsTheCertificateFile() throws Exception {
        LocalCa ca = LocalCa.create(dir);
        CaExport export = new CaExport(ca);
        assertThat(export.caPem()).isEqualTo(ca.certificatePem());
        assertThat(parse(export.caPem())).containsExactly(ca.certificate());
        assertThat(export.caPem().lines().filter(l -> !l.startsWith("-----"))).allMatch(l -> l.length() <= 64);
    }

    @Test
    void bundleIsTheSystemRootsFollowedByTheCa() throws Exception {
        LocalCa ca = LocalCa.create(dir);
        CaExport export = new CaExport(ca);
        List<Certificate> bundle = parse(export.bundlePem());
        List<Certificate> system = new ArrayList<>(SystemRoots.load());

        assertThat(system).hasSizeGreaterThan(50);
        assertThat(bundle).hasSize(system.size() + 1);
        assertThat(bundle.subList(0, system.size())).containsExactlyElementsOf(system);
        assertThat(bundle.get(bundle.size() - 1)).isEqualTo(ca.certificate());
        assertThat(export.systemRootCount()).isEqualTo(system.size());
        assertThat(export.bundlePem()).endsWith(ca.certificatePem());
    }

    @Test
    void theCaAppearsOnceEvenIfTheSystemAlreadyTrustsIt() throws Exception {
        LocalCa ca = LocalCa.create(dir);
        TestPki other = new TestPki("Sys");
        CaExport export = new CaExport(ca.certificate(), List.of(other.root, ca.certificate()));
        assertThat(parse(export.bundlePem())).containsExactly(other.root, ca.certificate());
    }

    static List<Certificate> parse(String pem) throws Exception {
        Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509")
                .generateCertificates(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
        return new ArrayList<>(certs);
    }
}
