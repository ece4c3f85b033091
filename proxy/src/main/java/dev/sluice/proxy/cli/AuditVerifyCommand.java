package dev.sluice.proxy.cli;

import dev.sluice.proxy.audit.AuditVerifier;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code sluice audit verify}: checks the hash chain across the whole set ({@link AuditVerifier}).
 * Prints {@code ok: N records in M files} and exits 0, or prints every problem as
 * {@code FILE: line N: MESSAGE} (at most {@value AuditVerifier#MAX_PROBLEMS_KEPT}), then
 * {@code FAILED: ...; first: FILE line N}, and exits 1.
 */
@Command(name = "verify", description = "Check the audit log's hash chain; name the first line where it breaks.")
final class AuditVerifyCommand extends CliCommand implements Callable<Integer> {


    @Mixin
    AuditInput input;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = out();
        PrintWriter err = err();
        List<Path> files = auditFiles(input);
        if (files == null) {
            return 1;
        }
        AuditVerifier.Result result = AuditVerifier.verify(files);
        String counts = result.records() + " records in " + result.files() + " files";
        if (result.ok()) {
            out.println("ok: " + counts + (result.startsMidChain()
                    ? " (the chain starts in " + files.get(0).getFileName()
                            + ": older files were rotated away)" : ""));
            return 0;
        }
        result.problems().forEach(out::println);
        if (result.problemCount() > result.problems().size()) {
            out.println("... and " + (result.problemCount() - result.problems().size()) + " more");
        }
        AuditVerifier.Problem first = result.problems().get(0);
        out.println("FAILED: " + result.problemCount() + (result.problemCount() == 1 ? " problem" : " problems")
                + " in " + counts + "; first: " + first.file() + " line " + first.line());
        return 1;
    }
}
