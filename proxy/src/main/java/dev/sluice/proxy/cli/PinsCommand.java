package dev.sluice.proxy.cli;

import dev.sluice.certs.PinRecord;
import dev.sluice.certs.PinStore;
import java.io.PrintWriter;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice pins show [HOST]} and {@code sluice pins reset HOST}: the TOFU pins recorded in the data
 * dir ({@code pins/}). A reset takes effect in a running Sluice too, from its next upstream connection to
 * that host (upstream TLS sessions are never resumed, so every connection checks the pin store).
 */
@Command(name = "pins", description = "Show or reset recorded (TOFU) pins.",
        subcommands = {PinsCommand.Show.class, PinsCommand.Reset.class})
final class PinsCommand {

    @Command(name = "show", description = "Print recorded pins, for every host or one.")
    static final class Show extends CliCommand implements Callable<Integer> {
        @Mixin
        CommonOptions common;
        @Parameters(index = "0", arity = "0..1", paramLabel = "HOST")
        String host;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = out();
            Map<String, PinRecord> all = PinStore.open(common.dataDir).all();
            int shown = 0;
            for (PinRecord record : all.values()) {
                if (host == null || host.equalsIgnoreCase(record.host())) {
                    out.println(record.host() + "  recorded " + record.recordedAt());
                    record.pins().forEach(pin -> out.println("  " + pin));
                    shown++;
                }
            }
            if (shown == 0) {
                out.println(host == null ? "no pins recorded" : "no pins recorded for " + host);
            }
            return host != null && shown == 0 ? 1 : 0;
        }
    }

    @Command(name = "reset", description = "Forget the recorded pins of HOST (the next chain is recorded anew).")
    static final class Reset extends CliCommand implements Callable<Integer> {
        @Mixin
        CommonOptions common;
        @Parameters(index = "0", paramLabel = "HOST")
        String host;

        @Override
        public Integer call() throws Exception {
            boolean removed = PinStore.open(common.dataDir).reset(host);
            out().println(removed ? "reset pins of " + host : "no pins recorded for " + host);
            return removed ? 0 : 1;
        }
    }
}
