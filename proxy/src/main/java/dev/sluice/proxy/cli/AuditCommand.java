package dev.sluice.proxy.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;

/**
 * {@code sluice audit summary|tail|show|verify}: reads the audit log (JSON Lines) over one file or a
 * rotated set. Exit codes: 0 success; 1 no audit log, an unreadable file, or (verify) a broken chain;
 * 2 a usage error such as a bad {@code --since}. See docs/audit.md.
 */
@Command(name = "audit", description = "Read the audit log: summary, tail, show, verify, suggest.",
        subcommands = {AuditSummaryCommand.class, AuditTailCommand.class, AuditShowCommand.class,
                AuditVerifyCommand.class, AuditSuggestCommand.class})
final class AuditCommand {

    /** Prints rows as left-aligned columns separated by two spaces; numbers right-aligned. */
    static void printTable(PrintWriter out, List<String> header, List<List<String>> rows) {
        int[] widths = new int[header.size()];
        boolean[] numeric = new boolean[header.size()];
        java.util.Arrays.fill(numeric, !rows.isEmpty());
        for (int i = 0; i < header.size(); i++) {
            widths[i] = header.get(i).length();
        }
        for (List<String> row : rows) {
            for (int i = 0; i < row.size(); i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
                numeric[i] &= row.get(i).matches("-?[0-9]+");
            }
        }
        List<List<String>> all = new ArrayList<>();
        all.add(header);
        all.addAll(rows);
        for (List<String> row : all) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.size(); i++) {
                String cell = row.get(i);
                String pad = " ".repeat(widths[i] - cell.length());
                if (i > 0) {
                    line.append("  ");
                }
                line.append(numeric[i] ? pad + cell : cell + (i == row.size() - 1 ? "" : pad));
            }
            out.println(line);
        }
    }
}
