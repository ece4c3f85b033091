package dev.sluice.proxy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who may read what, as an operator finds it on disk after {@code sluice env}: the data dir is private
 * ({@code rwx------}: CA key, pins, audit log), the CA key {@code rw-------}; the CA certificate and
 * the bundle that {@code sluice env} names are public ({@code rw-r--r--}), and {@code --trust-dir}
 * puts them where a sandbox running as another user can read them.
 */
class DataAtRestTest {

    private static final String POLICY = """
            version: 1
            extensions:
              default:
                allow: []
            """;

    private static Map<String, String> env(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(err), args);
        assertThat(code).as(err.toString()).isZero();
        Map<String, String> exports = new HashMap<>();
        Matcher m = Pattern.compile("(?m)^export (\\w+)='([^']*)'$").matcher(out.toString());
        while (m.find()) {
            exports.put(m.group(1), m.group(2));
        }
        return exports;
    }

    private static String mode(Path p) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
    }

    @Test
    void theDataDirIsPrivateAndTheTrustFilesArePublic(@TempDir Path dir) throws Exception {
        Path policy = Files.writeString(dir.resolve("policy.yaml"), POLICY);
        Path data = dir.resolve("data");
        Map<String, String> exports = env("env", "--extension", "default", "--policy", policy.toString(),
                "--data-dir", data.toString());
        assertThat(mode(data)).isEqualTo("rwx------");
        assertThat(mode(data.resolve("ca.key.pem"))).isEqualTo("rw-------");
        Path ca = Path.of(exports.get("NODE_EXTRA_CA_CERTS"));
        Path bundle = Path.of(exports.get("SSL_CERT_FILE"));
        assertThat(ca.getParent()).isEqualTo(data.toAbsolutePath());
        assertThat(mode(ca)).isEqualTo("rw-r--r--");
        assertThat(mode(bundle)).isEqualTo("rw-r--r--");
    }

    @Test
    void trustDirHoldsPublicCopiesThatEnvNames(@TempDir Path dir) throws Exception {
        Path policy = Files.writeString(dir.resolve("policy.yaml"), POLICY);
        Path data = dir.resolve("data");
        Path trust = dir.resolve("trust");
        Map<String, String> exports = env("env", "--extension", "default", "--policy", policy.toString(),
                "--data-dir", data.toString(), "--trust-dir", trust.toString());
        assertThat(mode(trust)).isEqualTo("rwxr-xr-x");
        for (String name : new String[] {"NODE_EXTRA_CA_CERTS", "GOOSE_CA_CERT_PATH", "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "CARGO_HTTP_CAINFO"}) {
            Path named = Path.of(exports.get(name));
            assertThat(named.getParent()).as(name).isEqualTo(trust.toAbsolutePath());
            assertThat(mode(named)).as(name).isEqualTo("rw-r--r--");
        }
        assertThat(Files.readString(Path.of(exports.get("NODE_EXTRA_CA_CERTS"))))
                .isEqualTo(Files.readString(data.resolve("ca.crt.pem")));
        assertThat(Files.readString(Path.of(exports.get("SSL_CERT_FILE"))))
                .contains(Files.readString(data.resolve("ca.crt.pem")).strip());
        assertThat(mode(data)).isEqualTo("rwx------");
    }
}
