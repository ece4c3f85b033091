package dev.sluice.proxy.cli;

import dev.sluice.rules.policy.PolicyException;
import dev.sluice.rules.policy.PolicyLoader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code sluice audit suggest [--extension X] [--since WHEN] [--min-count N] [--write FILE]}: prints a
 * policy fragment (YAML, the shape of an {@code include} file, docs/policy.md "include") with the
 * narrowest allow rules that would have allowed the rule misses in the audit log ({@link PolicySuggester}
 * says which records count and what a rule looks like). {@code --write FILE} creates FILE with the
 * fragment instead (never overwrites: exit 1 when FILE exists). Exit codes: 0 success (also when there
 * is nothing to suggest); 1 no audit log, an unreadable file, or FILE exists; 2 a usage error.
 */
@Command(name = "suggest", mixinStandardHelpOptions = true,
        description = "Suggest the narrowest allow rules for what the audit log shows refused by the allowlist.")
final class AuditSuggestCommand extends CliCommand implements Callable<Integer> {

    @Mixin
    AuditInput input;

    @Option(names = "--since", paramLabel = "WHEN",
            description = "Only records from this time on: an RFC 3339 instant or a duration back from now (15m, 2h, 1d).")
    String since;

    @Option(names = "--extension", paramLabel = "NAME", description = "Only records of this extension.")
    String extension;

    @Option(names = "--min-count", paramLabel = "N", defaultValue = "3",
            description = "Distinct names under a suffix needed before *.suffix is suggested. Default: ${DEFAULT-VALUE}.")
    int minCount;

    @Option(names = "--write", paramLabel = "FILE",
            description = "Create FILE with the fragment (an overlay for the policy's include list); never overwrites.")
    Path write;

    @Override
    public Integer call() throws IOException {
        if (minCount < 1) {
            throw usage("--min-count: " + minCount + " (expected: an integer >= 1)");
        }
        AuditFilter filter = new AuditFilter();
        filter.since = since;
        filter.extension = extension;
        prepare(filter);
        List<Path> files = auditFiles(input);
        if (files == null) {
            return 1;
        }
        PolicySuggester suggester = new PolicySuggester(minCount);
        long skipped = AuditInput.forEachRecord(files, (line, r) -> {
            if (filter.matches(r)) {
                suggester.add(r);
            }
        });
        PolicySuggester.Suggestion s = suggester.result();
        String header = "Suggested by `sluice audit suggest` from " + s.considered() + " allowlist misses in "
                + files.size() + (files.size() == 1 ? " file" : " files")
                + (since != null ? " since " + since : "") + (extension != null ? ", extension " + extension : "")
                + ".\nReview it, then list this file under the policy's include: (or copy the rules into each\n"
                + "extension's allow list). Address-class, self-loop and malformed-input refusals are never suggested.";
        String yaml = PolicySuggester.toYaml(s, header);
        checkParses(yaml);
        if (skipped > 0) {
            err().println("sluice: skipped " + skipped + " lines that are not records (see `sluice audit verify`)");
        }
        if (write == null) {
            out().print(yaml);
            out().flush();
            return 0;
        }
        Path dir = write.toAbsolutePath().getParent();
        Path tmp = Files.createTempFile(dir, ".suggest-", ".tmp");
        try {
            Files.writeString(tmp, yaml, StandardCharsets.UTF_8);
            Files.move(tmp, write); // no REPLACE_EXISTING: an existing overlay is never overwritten
        } catch (FileAlreadyExistsException e) {
            err().println("sluice: " + write + " exists; not overwritten (choose another --write FILE)");
            return 1;
        } finally {
            Files.deleteIfExists(tmp);
        }
        PrintWriter out = out();
        out.println("wrote " + write + ": " + s.rules().values().stream().mapToInt(List::size).sum() + " rules for "
                + s.rules().size() + " extensions, " + s.flagged().size() + " hosts flagged");
        return 0;
    }

    /** The fragment must load as a fragment; a failure here is a bug in the suggester, not the log. */
    private static void checkParses(String yaml) {
        try {
            PolicyLoader.parseFragment(yaml, "suggestion");
        } catch (PolicyException e) {
            throw new IllegalStateException("suggested fragment does not load: " + e.getMessage(), e);
        }
    }
}
