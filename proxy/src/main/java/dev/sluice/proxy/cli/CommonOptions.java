package dev.sluice.proxy.cli;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The options every subcommand takes, with the same defaults as {@code run} (design.md "CLI"). */
final class CommonOptions {

    @Option(names = "--policy", paramLabel = "FILE",
            description = "Policy file (YAML, version 1). Default: the embedded default policy.")
    Path policy;

    @Option(names = "--data-dir", paramLabel = "DIR", defaultValue = "sluice-data",
            description = "Directory for the audit log (and later the CA and pins). Default: ${DEFAULT-VALUE}.")
    Path dataDir;

    /** Loads the policy named by {@code --policy}, or the embedded default. */
    Policy loadPolicy() throws PolicyException {
        return policy == null ? PolicyLoader.embeddedDefault() : PolicyLoader.load(policy);
    }
}
