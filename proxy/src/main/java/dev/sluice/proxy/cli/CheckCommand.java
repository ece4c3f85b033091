package dev.sluice.proxy.cli;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code sluice check FILE}: validates a policy and the fragments it includes; prints every error as
 * file:line:column (of the file it is in); exit 1 on any. On success, lists the fragments read and warns
 * (exit 0) about extensions with credentials that may open blind tunnels ({@code BlindTunnels}).
 */
@Command(name = "check", description = "Validate a policy file.")
final class CheckCommand extends CliCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "FILE", description = "The policy file to check.")
    Path file;

    @Override
    public Integer call() {
        try {
            Policy policy = PolicyLoader.load(file);
            out().println(file + ": ok (" + policy.extensions().size() + " extensions, "
                    + (policy.includes().isEmpty() ? "" : policy.includes().size()
                    + (policy.includes().size() == 1 ? " fragment, " : " fragments, "))
                    + "sha256 " + policy.sha256Hex() + ")");
            policy.includes().forEach(f -> out().println("  includes " + f));
            dev.sluice.rules.credential.BlindTunnels.warnings(policy).forEach(out()::println);
            return 0;
        } catch (PolicyException e) {
            e.errors().forEach(error -> out().println(error));
            return 1;
        }
    }
}
