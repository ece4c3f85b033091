package dev.sluice.proxy.cli;

import java.io.PrintWriter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** What every subcommand shares: its output and error writers (picocli's, so tests can capture them). */
abstract class CliCommand {

    @Spec
    CommandSpec spec;

    /** Returns where results go (standard output unless a test redirected it). */
    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    /** Returns where errors go (standard error unless a test redirected it). */
    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    /** Rejects an option value as a usage error (exit 2), with {@code message} as the reason. */
    picocli.CommandLine.ParameterException usage(String message) {
        return new picocli.CommandLine.ParameterException(spec.commandLine(), message);
    }

    /** Checks {@code --format}: {@code table} or {@code json}, else a usage error. */
    void checkFormat(String format) {
        if (!format.equals("table") && !format.equals("json")) {
            throw usage("--format: " + format + " (expected: table or json)");
        }
    }

    /** Prepares the record filters; a bad value is a usage error. */
    void prepare(AuditFilter filter) {
        try {
            filter.prepare(java.time.Clock.systemUTC());
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
    }

    /** Returns the audit files to read, oldest first, or null after printing why there are none. */
    java.util.List<java.nio.file.Path> auditFiles(AuditInput input) throws java.io.IOException {
        try {
            return input.files();
        } catch (AuditInput.InputException e) {
            err().println("sluice: " + e.getMessage());
            return null;
        }
    }
}
