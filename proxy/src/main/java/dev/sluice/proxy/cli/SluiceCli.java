package dev.sluice.proxy.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code sluice} command line (design.md "CLI"). Exit codes: 0 success, 1 a policy or check error,
 * 2 a usage error. {@code --help} and {@code --version} are inherited by every subcommand.
 */
@Command(name = "sluice", mixinStandardHelpOptions = true, scope = CommandLine.ScopeType.INHERIT, version = "sluice 0.1.0",
        description = "Egress allowlist forward proxy for sandboxed AI-agent extensions.",
        subcommands = {RunCommand.class, CheckCommand.class, DecideCommand.class, TokenCommand.class, CaCommand.class,
                EnvCommand.class, PinsCommand.class, AuditCommand.class, ApprovalsCommand.class})
public final class SluiceCli {

    private SluiceCli() {
    }

    /** Runs the command line and exits with its code. */
    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line on standard output and error, flushed before returning; returns the exit code. */
    public static int execute(String... args) {
        return execute(new java.io.PrintWriter(System.out, true), new java.io.PrintWriter(System.err, true), args);
    }

    /** Runs the command line with its output and error output sent to the given writers (for tests). */
    public static int execute(java.io.PrintWriter out, java.io.PrintWriter err, String... args) {
        CommandLine cli = new CommandLine(new SluiceCli());
        cli.setOut(out);
        cli.setErr(err);
        int code = cli.execute(args);
        out.flush();
        err.flush();
        return code;
    }
}
