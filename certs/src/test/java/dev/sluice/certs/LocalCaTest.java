package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.stream.Stream;
import org.bouncycastle.asn1.x509.Extension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LocalCaTest {

    @TempDir
    Path dir;

    @Test
    void createsKeyWithMode0600AndReloadsTheSameCa() throws Exception {
        Path data = dir.resolve("data");
        LocalCa created = LocalCa.loadOrCreate(data);

        Path key = data.resolve(LocalCa.KEY_FILE);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key))).isEqualTo("rw-------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data))).isEqualTo("rwx------");
        assertThat(Files.readString(key)).startsWith("-----BEGIN PRIVATE KEY-----\n")
                .endsWith("-----END PRIVATE KEY-----\n");
        assertThat(Files.readString(data.resolve(LocalCa.CERT_FILE))).isEqualTo(created.certificatePem());
        try (Stream<Path> files = Files.list(data)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder(LocalCa.KEY_FILE, LocalCa.CERT_FILE);
        }

        LocalCa loaded = LocalCa.loadOrCreate(data);
        assertThat(loaded.certificate()).isEqualTo(created.certificate());
        assertThat(loaded.spkiPin()).isEqualTo(created.spkiPin());
        assertThat(loaded.privateKey().getEncoded()).isEqualTo(created.privateKey().getEncoded());
        assertThat(LocalCa.load(data).certificate()).isEqualTo(created.certificate());
    }

    @Test
    void newCaHasTheDocumentedProfile() throws Exception {
        X509Certificate c = LocalCa.create(dir).certificate();
        assertThat(c.getSubjectX500Principal().getName()).matches("O=Sluice,CN=Sluice local CA [0-9a-f]{8}");
        assertThat(c.getIssuerX500Principal()).isEqualTo(c.getSubjectX500Principal());
        assertThat(c.getBasicConstraints()).isEqualTo(0);
        assertThat(c.getCriticalExtensionOIDs()).contains(Extension.basicConstraints.getId(), Extension.keyUsage.getId());
        boolean[] ku = c.getKeyUsage();
        assertThat(ku[5]).as("keyCertSign").isTrue();
        assertThat(ku[6]).as("cRLSign").isTrue();
        assertThat(ku[0]).as("digitalSignature").isFalse();
        assertThat(c.getExtensionValue(Extension.subjectKeyIdentifier.getId())).isNotNull();
        assertThat(c.getPublicKey().getAlgorithm()).isEqualTo("EC");
        assertThat(c.getSigAlgName()).isEqualTo("SHA256withECDSA");
        assertThat(c.getSerialNumber().signum()).isPositive();
        Duration validity = Duration.between(c.getNotBefore().toInstant(), c.getNotAfter().toInstant());
        assertThat(validity).isEqualTo(LocalCa.VALIDITY.plusHours(1));
        assertThat(c.getNotBefore().toInstant()).isBefore(Instant.now());
        c.verify(c.getPublicKey());
    }

    @ParameterizedTest
    @ValueSource(strings = {"rw-r--r--", "rw-r-----", "rw----r--", "rw--w----", "rw------x", "rwx---r--"})
    void refusesAKeyThatGroupOrOthersCanAccess(String mode) throws Exception {
        LocalCa.create(dir);
        Path key = dir.resolve(LocalCa.KEY_FILE);
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString(mode));

        String expected = mode;
        assertThatThrownBy(() -> LocalCa.loadOrCreate(dir))
                .isInstanceOf(CaKeyPermissionsException.class)
                .hasMessageContaining(expected)
                .hasMessageContaining("chmod 600")
                .satisfies(e -> assertThat(((CaKeyPermissionsException) e).keyFile()).isEqualTo(key));
    }

    @Test
    void acceptsAKeyOnlyTheOwnerCanRead() throws Exception {
        LocalCa created = LocalCa.create(dir);
        Files.setPosixFilePermissions(dir.resolve(LocalCa.KEY_FILE), PosixFilePermissions.fromString("r--------"));
        assertThat(LocalCa.load(dir).spkiPin()).isEqualTo(created.spkiPin());
    }

    @Test
    void refusesAKeyThatDoesNotMatchTheCertificate() throws Exception {
        LocalCa.create(dir.resolve("a"));
        LocalCa.create(dir.resolve("b"));
        Files.copy(dir.resolve("b").resolve(LocalCa.KEY_FILE), dir.resolve("a").resolve(LocalCa.KEY_FILE),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.setPosixFilePermissions(dir.resolve("a").resolve(LocalCa.KEY_FILE),
                PosixFilePermissions.fromString("rw-------"));

        assertThatThrownBy(() -> LocalCa.loadOrCreate(dir.resolve("a")))
                .isInstanceOf(CaException.class)
                .hasMessageContaining("does not match");
    }

    @Test
    void refusesAnIncompleteCa() throws Exception {
        LocalCa.create(dir);
        Files.delete(dir.resolve(LocalCa.CERT_FILE));
        assertThatThrownBy(() -> LocalCa.loadOrCreate(dir))
                .isInstanceOf(CaException.class)
                .hasMessageContaining("incomplete CA")
                .hasMessageContaining(LocalCa.CERT_FILE);
    }

    @Test
    void refusesAMalformedKey() throws Exception {
        LocalCa.create(dir);
        Files.writeString(dir.resolve(LocalCa.KEY_FILE), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
        assertThatThrownBy(() -> LocalCa.load(dir))
                .isInstanceOf(CaException.class)
                .hasMessageContaining("PKCS #8");
    }

    @Test
    void refusesASec1KeyWithAConversionHint() throws Exception {
        LocalCa.create(dir);
        Files.writeString(dir.resolve(LocalCa.KEY_FILE), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n");
        assertThatThrownBy(() -> LocalCa.load(dir))
                .isInstanceOf(CaException.class)
                .hasMessageContaining("openssl pkcs8 -topk8 -nocrypt");
    }

    @Test
    void loadWithoutCaSaysHowToCreateOne() {
        assertThatThrownBy(() -> LocalCa.load(dir))
                .isInstanceOf(CaException.class)
                .hasMessageContaining("sluice ca init");
    }

    @Test
    void createRefusesToOverwriteUnlessForced() throws Exception {
        LocalCa first = LocalCa.create(dir);
        assertThatThrownBy(() -> LocalCa.create(dir)).isInstanceOf(CaAlreadyExistsException.class);
        assertThat(LocalCa.load(dir).spkiPin()).isEqualTo(first.spkiPin());

        LocalCa second = LocalCa.create(dir, true);
        assertThat(second.spkiPin()).isNotEqualTo(first.spkiPin());
        assertThat(LocalCa.load(dir).spkiPin()).isEqualTo(second.spkiPin());
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(LocalCa.KEY_FILE))))
                .isEqualTo("rw-------");
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.filter(p -> p.getFileName().toString().endsWith(".tmp"))).isEmpty();
        }
    }

    @Test
    void toStringMasksTheKey() throws Exception {
        LocalCa ca = LocalCa.create(dir);
        assertThat(ca.toString()).contains("key=****").doesNotContain("PRIVATE");
    }
}
