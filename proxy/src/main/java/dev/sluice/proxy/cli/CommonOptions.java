package dev.sluice.proxy.cli;

import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The options every subcommand takes, with the same defaults as {@code run} (design.md "CLI"): so that
 * {@code sluice env}, {@code ca}, {@code pins} and {@code audit} read the data dir the running proxy
 * writes, both default to the environment variables {@code SLUICE_POLICY} and {@code SLUICE_DATA_DIR}
 * (the container image sets them), then to the embedded policy and {@code ./sluice-data}.
 */
final class CommonOptions {

    @Option(names = "--policy", paramLabel = "FILE", defaultValue = "${env:SLUICE_POLICY}",
            description = "Policy file (YAML, version 1). Default: $SLUICE_POLICY, else the embedded default policy.")
    Path policy;

    @Option(names = "--data-dir", paramLabel = "DIR", defaultValue = "${env:SLUICE_DATA_DIR:-sluice-data}",
            description = "Directory for the CA, the TOFU pins and the audit log; give every subcommand the one "
                    + "`run` uses. Default: $SLUICE_DATA_DIR, else sluice-data (now: ${DEFAULT-VALUE}).")
    Path dataDir;

    /** Loads the policy named by {@code --policy}, or the embedded default. */
    Policy loadPolicy() throws PolicyException {
        return policy == null ? PolicyLoader.embeddedDefault() : PolicyLoader.load(policy);
    }
}
