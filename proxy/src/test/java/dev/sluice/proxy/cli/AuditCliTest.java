package dev.sluice.proxy.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.audit.AuditLog;
import dev.sluice.proxy.audit.AuditReader;
import dev.sluice.proxy.audit.AuditRecord;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice audit summary|tail|verify} on a known set of records, in process. */
class AuditCliTest {

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private record Run(int code, String out, String err) {
    }

    private static Run sluice(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(code, out.toString(), err.toString());
    }

    @TempDir
    Path dataDir;

    private final Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
    private final Instant old = now.minus(Duration.ofHours(3));
    private final Instant recent = now.minus(Duration.ofMinutes(10));
    private int seq;

    private AuditRecord rec(Instant time, String ext, String decision, String reason, String host, int port,
                            long sent, long received, Map<String, Long> redactions) {
        seq++;
        return new AuditRecord(time, String.format("%016x", seq), ext, "10.0.0.2", 40000 + seq, "explicit",
                "CONNECT", "https", host, port, null, "tunnel", null, decision, reason, "r", null,
                decision.equals("deny") ? 403 : 200, sent, received, 5, redactions, null, null, null);
    }

    /**
     * github: 3 allowed to api.github.com:443 (sent 100+200+300, received 1000 each, 3 redactions),
     * a port_not_allowed to api.github.com:8443 and a not_allowlisted to evil.test:443 (recent);
     * npm: 2 allowed to registry.example.org:443 (sent 10 each) and a would_deny to x.test:443 (recent);
     * no extension: an unknown_extension denial (recent). 9 records, 4 of them recent.
     */
    @BeforeEach
    void writeKnownSet() throws Exception {
        try (AuditLog log = AuditLog.open(dataDir.resolve("audit.jsonl"), 1500, 10)) {
            log.write(rec(old, "github", "allow", "allowlisted", "api.github.com", 443, 100, 1000,
                    Map.of("openai-key", 2L, "aws-access-key", 1L)));
            log.write(rec(old, "github", "allow", "allowlisted", "api.github.com", 443, 200, 1000, null));
            log.write(rec(old, "npm", "allow", "allowlisted", "registry.example.org", 443, 10, 0, null));
            log.write(rec(old, "github", "allow", "allowlisted", "api.github.com", 443, 300, 1000, null));
            log.write(rec(old, "npm", "allow", "allowlisted", "registry.example.org", 443, 10, 0, null));
            log.write(rec(recent, "github", "deny", "port_not_allowed", "api.github.com", 8443, 0, 0, null));
            log.write(rec(recent, "github", "deny", "not_allowlisted", "evil.test", 443, 0, 0, null));
            log.write(rec(recent, "npm", "would_deny", "not_allowlisted", "x.test", 443, 5, 6, null));
            log.write(rec(recent, null, "deny", "unknown_extension", "api.github.com", 443, 0, 0, null));
        }
    }

    private String dir() {
        return dataDir.toString();
    }

    @Test
    void theKnownSetSpansRotatedFiles() throws Exception {
        assertThat(Files.exists(dataDir.resolve("audit.jsonl.1"))).isTrue();
    }

    @Test
    void summaryAsJson() throws Exception {
        Run run = sluice("audit", "summary", "--data-dir", dir(), "--format", "json");
        assertThat(run.code()).as(run.err()).isZero();
        JsonNode json = MAPPER.readTree(run.out());
        assertThat(json.get("records").asLong()).isEqualTo(9);
        assertThat(json.get("skipped_lines").asLong()).isZero();
        assertThat(json.get("files").size()).isGreaterThan(1);
        JsonNode exts = json.get("extensions");
        assertThat(exts).extracting(e -> e.get("extension").asText()).containsExactly("(unidentified)", "github", "npm");
        JsonNode gh = exts.get(1);
        assertThat(gh.get("requests").asLong()).isEqualTo(5);
        assertThat(gh.get("allowed").asLong()).isEqualTo(3);
        assertThat(gh.get("denied").asLong()).isEqualTo(2);
        assertThat(gh.get("would_deny").asLong()).isZero();
        assertThat(gh.get("denials_by_reason").toString())
                .isEqualTo("{\"not_allowlisted\":1,\"port_not_allowed\":1}");
        assertThat(gh.get("bytes.sent").asLong()).isEqualTo(600);
        assertThat(gh.get("bytes.received").asLong()).isEqualTo(3000);
        assertThat(gh.get("redactions").asLong()).isEqualTo(3);
        assertThat(gh.get("redactions_by_detector").toString()).isEqualTo("{\"aws-access-key\":1,\"openai-key\":2}");
        assertThat(gh.get("top_destinations").toString()).isEqualTo("[{\"destination\":\"api.github.com:443\",\"requests\":3},"
                + "{\"destination\":\"api.github.com:8443\",\"requests\":1},{\"destination\":\"evil.test:443\",\"requests\":1}]");
        JsonNode npm = exts.get(2);
        assertThat(npm.get("requests").asLong()).isEqualTo(3);
        assertThat(npm.get("would_deny").asLong()).isEqualTo(1);
        assertThat(npm.get("denied").asLong()).isZero();
        assertThat(npm.get("bytes.sent").asLong()).isEqualTo(25);
        JsonNode none = exts.get(0);
        assertThat(none.get("denials_by_reason").toString()).isEqualTo("{\"unknown_extension\":1}");
    }

    @Test
    void summaryAsTable() {
        Run run = sluice("audit", "summary", "--data-dir", dir());
        assertThat(run.code()).as(run.err()).isZero();
        assertThat(run.out()).startsWith("9 records in ");
        List<String> lines = run.out().lines().toList();
        assertThat(lines).contains(
                "EXTENSION       REQUESTS  ALLOWED  DENIED  WOULD_DENY  BYTES_SENT  BYTES_RECEIVED  REDACTIONS",
                "(unidentified)         1        0       1           0           0               0           0",
                "github                 5        3       2           0         600            3000           3",
                "npm                    3        2       0           1          25               6           0",
                "Denials by reason",
                "github          not_allowlisted          1",
                "github          port_not_allowed         1",
                "(unidentified)  unknown_extension        1",
                "Top destinations (by requests, at most 10 per extension)",
                "(unidentified)  api.github.com:443               1",
                "github          api.github.com:443               3",
                "npm             registry.example.org:443         2");
    }

    @Test
    void summaryFilters() throws Exception {
        JsonNode recentOnly = MAPPER.readTree(sluice("audit", "summary", "--data-dir", dir(), "--format", "json",
                "--since", "1h").out());
        assertThat(recentOnly.get("records").asLong()).isEqualTo(4);

        JsonNode byInstant = MAPPER.readTree(sluice("audit", "summary", "--data-dir", dir(), "--format", "json",
                "--since", recent.toString()).out());
        assertThat(byInstant.get("records").asLong()).isEqualTo(4);

        JsonNode github = MAPPER.readTree(sluice("audit", "summary", "--data-dir", dir(), "--format", "json",
                "--extension", "github").out());
        assertThat(github.get("records").asLong()).isEqualTo(5);
        assertThat(github.get("extensions")).hasSize(1);

        JsonNode denials = MAPPER.readTree(sluice("audit", "summary", "--data-dir", dir(), "--format", "json",
                "--decision", "deny", "--since", "2h").out());
        assertThat(denials.get("records").asLong()).isEqualTo(3);
        assertThat(denials.get("extensions")).extracting(e -> e.get("extension").asText())
                .containsExactly("(unidentified)", "github");
    }

    @Test
    void badFilterValuesAreUsageErrors() {
        Run since = sluice("audit", "summary", "--data-dir", dir(), "--since", "yesterday");
        assertThat(since.code()).isEqualTo(2);
        assertThat(since.err()).contains("--since: yesterday (expected: an RFC 3339 instant");
        Run decision = sluice("audit", "tail", "--data-dir", dir(), "--decision", "block");
        assertThat(decision.code()).isEqualTo(2);
        assertThat(decision.err()).contains("--decision: block (expected: allow, deny or would_deny)");
        Run format = sluice("audit", "summary", "--data-dir", dir(), "--format", "xml");
        assertThat(format.code()).isEqualTo(2);
    }

    @Test
    void tailPrintsTheLastRecordsOldestFirst() throws Exception {
        Run json = sluice("audit", "tail", "--data-dir", dir(), "-n", "3", "--format", "json");
        assertThat(json.code()).as(json.err()).isZero();
        List<String> lines = json.out().lines().toList();
        assertThat(lines).hasSize(3);
        assertThat(lines).extracting(l -> MAPPER.readTree(l).get("event.id").asText())
                .containsExactly("0000000000000007", "0000000000000008", "0000000000000009");
        assertThat(lines.get(0)).contains("\"prev_hash\":\"");

        Run table = sluice("audit", "tail", "--data-dir", dir(), "--decision", "deny");
        assertThat(table.code()).isZero();
        List<String> rows = table.out().lines().toList();
        assertThat(rows).hasSize(4);
        assertThat(rows.get(0)).startsWith("TIME").contains("EXTENSION", "DECISION", "REASON", "DESTINATION");
        assertThat(rows.get(1)).contains("github", "port_not_allowed", "api.github.com:8443", "403");
        assertThat(rows.get(3)).contains(" (unidentified) ", "unknown_extension");
    }

    @Test
    void theLongestReasonsKeepTheTableColumnsInPlace(@TempDir Path other) throws Exception {
        try (AuditLog log = AuditLog.open(other.resolve("audit.jsonl"), 1 << 20, 2)) {
            log.write(rec(recent, "agent", "deny", "credential_host_mismatch", "api.github.com", 443, 0, 0, null));
            log.write(rec(recent, "agent", "deny", "interception_unavailable", "api.github.com", 443, 0, 0, null));
            log.write(rec(recent, "agent", "deny", "self_loop", "api.github.com", 443, 0, 0, null));
        }
        Run table = sluice("audit", "tail", "--data-dir", other.toString());
        assertThat(table.code()).as(table.err()).isZero();
        List<String> rows = table.out().lines().toList();
        assertThat(rows).hasSize(4);
        int method = rows.get(0).indexOf("METHOD");
        int destination = rows.get(0).indexOf("DESTINATION");
        for (String row : rows.subList(1, rows.size())) {
            assertThat(row.substring(method)).as(row).startsWith("CONNECT ");
            assertThat(row.substring(destination)).as(row).startsWith("api.github.com:443 ");
        }
    }

    @Test
    void verifyPassesOnTheCleanSetAndNamesAnEditedLine() throws Exception {
        Run ok = sluice("audit", "verify", "--data-dir", dir());
        assertThat(ok.code()).as(ok.out() + ok.err()).isZero();
        assertThat(ok.out()).matches("ok: 9 records in \\d+ files\\R");

        Path oldest = AuditReader.files(dataDir.resolve("audit.jsonl")).get(0);
        List<String> lines = Files.readAllLines(oldest, StandardCharsets.UTF_8);
        assertThat(lines.size()).isGreaterThanOrEqualTo(2);
        lines.set(0, lines.get(0).replaceFirst("\"duration_ms\":5", "\"duration_ms\":6"));
        Files.write(oldest, lines, StandardCharsets.UTF_8);
        Run broken = sluice("audit", "verify", "--data-dir", dir());
        assertThat(broken.code()).isEqualTo(1);
        assertThat(broken.out()).contains(oldest + ": line 2: prev_hash does not match line 1")
                .contains("FAILED: 1 problem in 9 records");
    }

    @Test
    void verifyWithFileReadsTheRotatedSetOrOneRotatedFile() {
        Path active = dataDir.resolve("audit.jsonl");
        Run set = sluice("audit", "verify", "--file", active.toString());
        assertThat(set.code()).isZero();
        assertThat(set.out()).startsWith("ok: 9 records");
        Run one = sluice("audit", "verify", "--file", dataDir.resolve("audit.jsonl.1").toString());
        assertThat(one.code()).isZero();
        assertThat(one.out()).startsWith("ok: ").contains("in 1 files");
    }

    @Test
    void aMissingLogIsAnError(@TempDir Path empty) {
        Run run = sluice("audit", "verify", "--data-dir", empty.toString());
        assertThat(run.code()).isEqualTo(1);
        assertThat(run.err()).contains("no audit log at " + empty.resolve("audit.jsonl").toAbsolutePath());
    }

    @Test
    void theAuditPathComesFromThePolicy(@TempDir Path other) throws Exception {
        Path policy = Files.writeString(other.resolve("p.yaml"), "version: 1\naudit:\n  path: logs/a.jsonl\n");
        try (AuditLog log = AuditLog.open(other.resolve("logs/a.jsonl"))) {
            log.write(rec(recent, "x", "allow", "allowlisted", "a.test", 443, 1, 1, null));
        }
        Run run = sluice("audit", "verify", "--policy", policy.toString(), "--data-dir", other.toString());
        assertThat(run.code()).as(run.err()).isZero();
        assertThat(run.out()).startsWith("ok: 1 records in 1 files");
    }

    @Test
    void tailFollowPrintsNewRecordsAcrossARotation() throws Exception {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        Thread follower = new Thread(() -> SluiceCli.execute(new PrintWriter(out), new PrintWriter(err),
                "audit", "tail", "--data-dir", dir(), "-n", "1", "--format", "json", "--follow"));
        follower.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> out.toString().contains("0000000000000009"));
            seq = 100;
            try (AuditLog log = AuditLog.open(dataDir.resolve("audit.jsonl"), 1500, 10)) {
                for (int i = 0; i < 6; i++) {
                    log.write(rec(now, "late", "allow", "allowlisted", "a.test", 443, 1, 1, null));
                }
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> out.toString().contains("000000000000006a"));
        } finally {
            follower.interrupt();
            follower.join(5000);
        }
        assertThat(follower.isAlive()).isFalse();
        assertThat(out.toString()).contains("0000000000000069").contains("\"extension\":\"late\"");
    }
}
