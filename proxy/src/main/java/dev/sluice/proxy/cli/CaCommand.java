package dev.sluice.proxy.cli;

import dev.sluice.certs.CaException;
import dev.sluice.certs.CaExport;
import dev.sluice.certs.LocalCa;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice ca init|show|export [--bundle]}: the local CA in the data dir ({@code ca.key.pem},
 * mode 0600, and {@code ca.crt.pem}). Exit 1 when the CA cannot be created or loaded.
 */
@Command(name = "ca", description = "Manage the local CA used for interception.",
        subcommands = {CaCommand.Init.class, CaCommand.Show.class, CaCommand.Export.class})
final class CaCommand {

    @Command(name = "init", description = "Create the CA (refuses to replace one unless --force).")
    static final class Init extends CliCommand implements Callable<Integer> {
        @Mixin
        CommonOptions common;
        @Option(names = "--force", description = "Replace an existing CA (every client must trust the new one).")
        boolean force;

        @Override
        public Integer call() {
            PrintWriter out = out();
            try {
                LocalCa ca = LocalCa.create(common.dataDir, force);
                out.println("created " + ca.certificateFile() + " (" + ca.certificate().getSubjectX500Principal().getName()
                        + ", " + ca.spkiPin() + ")");
                return 0;
            } catch (CaException e) {
                err().println("sluice: " + e.getMessage());
                return 1;
            }
        }
    }

    @Command(name = "show", description = "Print the CA's subject, validity and SPKI pin.")
    static final class Show extends CliCommand implements Callable<Integer> {
        @Mixin
        CommonOptions common;

        @Override
        public Integer call() {
            PrintWriter out = out();
            try {
                LocalCa ca = LocalCa.load(common.dataDir);
                out.println("file:      " + ca.certificateFile());
                out.println("subject:   " + ca.certificate().getSubjectX500Principal().getName());
                out.println("not after: " + ca.certificate().getNotAfter().toInstant());
                out.println("spki pin:  " + ca.spkiPin());
                return 0;
            } catch (CaException e) {
                err().println("sluice: " + e.getMessage());
                return 1;
            }
        }
    }

    @Command(name = "export", description = "Print the CA certificate (PEM), or with --bundle the system roots plus the CA.")
    static final class Export extends CliCommand implements Callable<Integer> {
        @Mixin
        CommonOptions common;
        @Option(names = "--bundle", description = "System roots plus Sluice's CA, for variables that replace the trust store.")
        boolean bundle;

        @Override
        public Integer call() throws Exception {
            try {
                LocalCa ca = LocalCa.load(common.dataDir);
                out().print(bundle ? new CaExport(ca).bundlePem() : ca.certificatePem());
                return 0;
            } catch (CaException e) {
                err().println("sluice: " + e.getMessage());
                return 1;
            }
        }
    }
}
