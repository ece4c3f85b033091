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
}
