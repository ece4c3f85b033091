package dev.sluice.proxy.cli;

import dev.sluice.certs.CaException;
import dev.sluice.certs.CaExport;
import dev.sluice.certs.LocalCa;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice env --extension NAME [--token T]}: prints POSIX shell exports that point a sandboxed
 * process at Sluice (field-notes "Making a client trust Sluice's CA"): the proxy variables with the
 * extension's credentials (a {@code <token>} placeholder when no token is given; none for the
 * {@code default} extension), {@code NO_PROXY}, {@code NODE_USE_ENV_PROXY}, and the CA variables —
 * the additive ones ({@code NODE_EXTRA_CA_CERTS}, {@code GOOSE_CA_CERT_PATH}) name the CA file, the
 * replacing ones ({@code SSL_CERT_FILE}, {@code REQUESTS_CA_BUNDLE}, {@code CURL_CA_BUNDLE},
 * {@code GIT_SSL_CAINFO}, {@code CARGO_HTTP_CAINFO}) name a bundle of the system roots plus the CA,
 * written to {@code <data dir>/ca-bundle.pem}. The data dir is the one {@code run} uses ({@code --data-dir},
 * else {@code $SLUICE_DATA_DIR}, else {@code ./sluice-data}); the first comment lines name the CA file.
 * Creates the CA if there is none yet, with a warning on standard error: a proxy that has run with that
 * data dir would have created it, so the exports likely name another CA than the running proxy's.
 * Last, one variable per credential the extension may use ({@code placeholder_env}), holding its
 * placeholder (derived from {@code <data dir>/credential-placeholder.key}, created when absent; see
 * docs/credentials.md).
 */
@Command(name = "env", description = "Print shell exports for a sandboxed process.")
final class EnvCommand extends CliCommand implements Callable<Integer> {

    /** The bundle file written into the data dir. */
    static final String BUNDLE_FILE = "ca-bundle.pem";

    @Mixin
    CommonOptions common;
    @Option(names = "--extension", required = true, paramLabel = "NAME")
    String extension;
    @Option(names = "--token", paramLabel = "T", description = "The extension's token (default: a <token> placeholder).")
    String token;
    @Option(names = "--trust-dir", paramLabel = "DIR", description = "Write the CA certificate and the bundle "
            + "(public, mode 0644) into DIR and name them there, for a sandbox that runs as another user: the data "
            + "dir itself is private (0700). Default: the data dir.")
    Path trustDir;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = out();
        Policy policy;
        try {
            policy = common.loadPolicy();
        } catch (PolicyException e) {
            e.errors().forEach(error -> err().println(error));
            return 1;
        }
        if (policy.extension(extension).isEmpty()) {
            err().println("sluice: no extension named \"" + extension + "\" in " + policy.source());
            return 2;
        }
        boolean caExisted = Files.exists(common.dataDir.resolve(LocalCa.CERT_FILE));
        LocalCa ca;
        try {
            ca = LocalCa.loadOrCreate(common.dataDir);
        } catch (CaException e) {
            err().println("sluice: " + e.getMessage());
            return 1;
        }
        Path caFile = ca.certificateFile().toAbsolutePath();
        Path dir = common.dataDir;
        if (trustDir != null) {
            dir = trustDir;
            if (!Files.isDirectory(dir)) {
                Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PUBLIC_DIR));
            }
            caFile = dir.resolve(ca.certificateFile().getFileName()).toAbsolutePath();
            writePublic(caFile, Files.readString(ca.certificateFile(), StandardCharsets.US_ASCII));
        }
        Path bundle = dir.resolve(BUNDLE_FILE).toAbsolutePath();
        writePublic(bundle, new CaExport(ca).bundlePem());

        InetSocketAddress listen = policy.listen().proxy();
        String host = listen.getAddress().isAnyLocalAddress() ? "127.0.0.1" : listen.getAddress().getHostAddress();
        if (host.indexOf(':') >= 0) {
            host = "[" + host + "]";
        }
        String credentials = extension.equals("default") && token == null ? ""
                : extension + ":" + (token == null ? "<token>" : token) + "@";
        String proxy = "http://" + credentials + host + ":" + listen.getPort();
        if (token == null && !extension.equals("default")) {
            err().println("sluice: warning: no --token given; the proxy URLs below carry the literal placeholder "
                    + "<token>, which Sluice answers with 407 unknown_extension. Replace it with the extension's "
                    + "token (`sluice token` makes one), or pass --token.");
        }
        if (!caExisted) {
            err().println("sluice: warning: no CA in " + common.dataDir.toAbsolutePath() + " yet; created "
                    + caFile + ". A running Sluice uses the CA in its own --data-dir: give `sluice env` the same "
                    + "--data-dir (or SLUICE_DATA_DIR) as `sluice run`.");
        }
        out.println("# Sluice: egress for extension \"" + extension + "\" (" + policy.source() + ")");
        out.println("# CA certificate: " + caFile + " (data dir " + common.dataDir.toAbsolutePath() + ")");
        for (String name : new String[] {"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"}) {
            export(out, name, proxy);
        }
        export(out, "NO_PROXY", "");
        export(out, "no_proxy", "");
        export(out, "NODE_USE_ENV_PROXY", "1");
        out.println("# CA trust: additive variables name Sluice's CA; replacing ones name system roots + CA");
        export(out, "NODE_EXTRA_CA_CERTS", caFile.toString());
        export(out, "GOOSE_CA_CERT_PATH", caFile.toString());
        for (String name : new String[] {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                "CARGO_HTTP_CAINFO"}) {
            export(out, name, bundle.toString());
        }
        java.util.List<String> granted = policy.extension(extension).get().credentials();
        if (!granted.isEmpty()) {
            Path keyFile = common.dataDir.resolve(dev.sluice.proxy.credential.PlaceholderKey.FILE_NAME);
            if (!Files.exists(keyFile)) {
                err().println("sluice: warning: no credential placeholder key in " + common.dataDir.toAbsolutePath()
                        + " yet; created " + keyFile.toAbsolutePath() + ". Placeholders derive from the key in the "
                        + "running Sluice's own --data-dir: these match it only if `sluice run` uses this data dir "
                        + "(give `sluice env` the same --data-dir or SLUICE_DATA_DIR), else they are refused as "
                        + "credential_host_mismatch.");
            }
            dev.sluice.rules.credential.Placeholders placeholders =
                    dev.sluice.proxy.credential.PlaceholderKey.loadOrCreate(common.dataDir);
            out.println("# Credentials: placeholders Sluice swaps for the real values on the hosts they belong to");
            for (String name : granted) {
                export(out, policy.credentials().get(name).placeholderEnv(), placeholders.placeholder(extension, name));
            }
        }
        return 0;
    }

    private static final java.util.Set<java.nio.file.attribute.PosixFilePermission> PUBLIC_FILE =
            PosixFilePermissions.fromString("rw-r--r--");
    private static final java.util.Set<java.nio.file.attribute.PosixFilePermission> PUBLIC_DIR =
            PosixFilePermissions.fromString("rwxr-xr-x");

    /** Replaces {@code file} atomically with {@code pem}, mode {@code rw-r--r--} (public trust material). */
    private static void writePublic(Path file, String pem) throws java.io.IOException {
        Path tmp = Files.createTempFile(file.getParent(), "." + file.getFileName(), ".tmp");
        try {
            Files.writeString(tmp, pem, StandardCharsets.US_ASCII);
            Files.setPosixFilePermissions(tmp, PUBLIC_FILE);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static void export(PrintWriter out, String name, String value) {
        out.println("export " + name + "='" + value.replace("'", "'\\''") + "'");
    }
}
