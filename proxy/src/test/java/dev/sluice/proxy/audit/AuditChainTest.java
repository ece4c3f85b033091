package dev.sluice.proxy.audit;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The hash chain, rotation and retention of the audit log, and the verifier that checks them. */
class AuditChainTest {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Instant T = Instant.parse("2026-11-30T09:31:02.123Z");

    @TempDir
    Path dir;

    static AuditRecord record(int i) {
        return new AuditRecord(T.plusSeconds(i), String.format("%016x", i), "ext-" + (i % 3), "10.0.0.2", 40000 + i,
                "explicit", "GET", "https", "host" + (i % 4) + ".test", 443, "/item/" + i, "tunnel", null,
                i % 5 == 0 ? "deny" : "allow", i % 5 == 0 ? "not_allowlisted" : "allowlisted", "r", "192.0.2.1",
                i % 5 == 0 ? 403 : 200, i, 2L * i, 7, null, null, null, null);
    }

    private static void write(AuditLog log, int from, int to) {
        for (int i = from; i < to; i++) {
            log.write(record(i));
        }
    }

    private static List<String> lines(Path file) throws IOException {
        return Files.readAllLines(file, StandardCharsets.UTF_8);
    }

    private static String prevHash(String line) throws IOException {
        return MAPPER.readTree(line).get("prev_hash").asText();
    }

    private static String hash(String line) {
        return AuditChain.sha256Hex(line.getBytes(StandardCharsets.UTF_8));
    }

    private static void assertChained(List<String> lines, String first) throws IOException {
        String expected = first;
        for (String line : lines) {
            assertThat(prevHash(line)).isEqualTo(expected);
            expected = hash(line);
        }
    }

    private AuditVerifier.Result verify(Path active) throws IOException {
        return AuditVerifier.verify(AuditReader.files(active));
    }

    @Test
    void everyLineEndsWithTheHashOfThePreviousLineFromZeros() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 50);
        }
        List<String> lines = lines(file);
        assertThat(lines).hasSize(50);
        assertThat(prevHash(lines.get(0))).isEqualTo("0".repeat(64)).isEqualTo(AuditChain.GENESIS);
        assertChained(lines, AuditChain.GENESIS);
        for (String line : lines) {
            JsonNode json = MAPPER.readTree(line);
            List<String> keys = new ArrayList<>();
            json.fieldNames().forEachRemaining(keys::add);
            assertThat(keys.get(keys.size() - 1)).isEqualTo(AuditFields.PREV_HASH);
            assertThat(line).endsWith(",\"prev_hash\":\"" + prevHash(line) + "\"}");
        }
        assertThat(verify(file).ok()).isTrue();
    }

    @Test
    void theChainContinuesAcrossARestart() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 3);
        }
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 3, 5);
        }
        List<String> lines = lines(file);
        assertThat(lines).hasSize(5);
        assertThat(prevHash(lines.get(3))).isEqualTo(hash(lines.get(2)));
        assertChained(lines, AuditChain.GENESIS);
        AuditVerifier.Result result = verify(file);
        assertThat(result.ok()).isTrue();
        assertThat(result.records()).isEqualTo(5);
        assertThat(result.files()).isEqualTo(1);
    }

    @Test
    void aPartialLastLineIsNotAppendedToAndVerifyNamesIt() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 2);
        }
        Files.writeString(file, "{\"time\":\"2026-11-30T09:", StandardOpenOption.APPEND);
        assertThat(verify(file).problems()).extracting(AuditVerifier.Problem::line, AuditVerifier.Problem::message)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(3L,
                        "partial record (no newline at the end of the file)"));

        try (AuditLog log = AuditLog.open(file)) {
            write(log, 2, 4);
        }
        List<String> lines = lines(file);
        assertThat(lines).hasSize(5);
        assertThat(lines.get(2)).isEqualTo("{\"time\":\"2026-11-30T09:");
        assertThat(prevHash(lines.get(3))).isEqualTo(hash(lines.get(1)));
        assertThat(prevHash(lines.get(4))).isEqualTo(hash(lines.get(3)));
        AuditVerifier.Result result = verify(file);
        assertThat(result.problemCount()).isEqualTo(1);
        assertThat(result.problems().get(0).line()).isEqualTo(3);
        assertThat(result.problems().get(0).message()).startsWith("unparsable record");
        assertThat(result.records()).isEqualTo(4);
    }

    @Test
    void rotationKeepsTheNewestFilesAndChainsAcrossThem() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        int lineBytes = record(10).toJson().length() + ",\"prev_hash\":\"\"".length() + 64 + 1;
        long max = 3L * lineBytes + 10; // three records per file
        AuditLog log = AuditLog.open(file, max, 3);
        write(log, 10, 40); // 30 records: 10 files' worth
        log.close();
        assertThat(log.rotations()).isEqualTo(9);
        assertThat(AuditReader.files(file)).extracting(p -> p.getFileName().toString())
                .containsExactly("audit.jsonl.3", "audit.jsonl.2", "audit.jsonl.1", "audit.jsonl");
        assertThat(Files.exists(dir.resolve("audit.jsonl.4"))).isFalse();

        List<String> all = new ArrayList<>();
        String expected = null;
        for (Path f : AuditReader.files(file)) {
            assertThat(Files.size(f)).isLessThanOrEqualTo(max);
            List<String> lines = lines(f);
            assertThat(lines).hasSize(3);
            if (expected != null) {
                // A rotated file's first record carries the hash of its predecessor's last record.
                assertThat(prevHash(lines.get(0))).isEqualTo(expected);
            }
            expected = hash(lines.get(lines.size() - 1));
            all.addAll(lines);
        }
        assertThat(all).extracting(l -> MAPPER.readTree(l).get("event.id").asText())
                .containsExactly(java.util.stream.IntStream.range(28, 40).mapToObj(i -> String.format("%016x", i))
                        .toArray(String[]::new));
        assertChained(all, prevHash(all.get(0)));
        AuditVerifier.Result result = verify(file);
        assertThat(result.ok()).isTrue();
        assertThat(result.startsMidChain()).isTrue();
        assertThat(result.records()).isEqualTo(12);
        assertThat(result.files()).isEqualTo(4);
    }

    @Test
    void rotationLosesNoRecordWhileRetentionAllowsAndContinuesAfterARestart() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file, 2000, 100)) {
            write(log, 0, 100);
        }
        try (AuditLog log = AuditLog.open(file, 2000, 100)) {
            write(log, 100, 150);
        }
        List<String> all = new ArrayList<>();
        for (Path f : AuditReader.files(file)) {
            assertThat(Files.size(f)).isLessThanOrEqualTo(2000);
            all.addAll(lines(f));
        }
        assertThat(all).hasSize(150);
        assertChained(all, AuditChain.GENESIS);
        AuditVerifier.Result result = verify(file);
        assertThat(result.ok()).as("%s", result.problems()).isTrue();
        assertThat(result.startsMidChain()).isFalse();
    }

    @Test
    void aRecordLargerThanTheLimitGetsAFileOfItsOwn() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file, 10, 5)) {
            write(log, 0, 3);
        }
        assertThat(AuditReader.files(file)).hasSize(3);
        for (Path f : AuditReader.files(file)) {
            assertThat(lines(f)).hasSize(1);
        }
        assertThat(verify(file).ok()).isTrue();
    }

    @Test
    void rotationDeletesEveryRotatedFileBeyondKeepFiles() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file, 10, 10)) {
            write(log, 0, 8); // audit.jsonl.1 .. .7 and the active file
        }
        assertThat(AuditReader.files(file)).hasSize(8);
        try (AuditLog log = AuditLog.open(file, 10, 2)) {
            write(log, 8, 9);
        }
        assertThat(AuditReader.files(file)).extracting(p -> p.getFileName().toString())
                .containsExactly("audit.jsonl.2", "audit.jsonl.1", "audit.jsonl");
        assertThat(verify(file).ok()).isTrue();
    }

    @Test
    void anEmptyActiveFileContinuesFromTheNewestRotatedFile() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 2);
        }
        Files.move(file, dir.resolve("audit.jsonl.1")); // as if stopped between rename and the next write
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 2, 3);
        }
        assertThat(prevHash(lines(file).get(0))).isEqualTo(hash(lines(dir.resolve("audit.jsonl.1")).get(1)));
        assertThat(verify(file).ok()).isTrue();
    }

    @Test
    void aFailedRotationIsRetriedAndNoRecordIsLost() throws Exception {
        AtomicInteger failures = new AtomicInteger(2);
        List<StringBuilder> files = new ArrayList<>(List.of(new StringBuilder()));
        AuditOutput output = new AuditOutput() {
            @Override
            public synchronized int write(ByteBuffer src) {
                int n = src.remaining();
                byte[] b = new byte[n];
                src.get(b);
                files.get(files.size() - 1).append(new String(b, StandardCharsets.UTF_8));
                return n;
            }

            @Override
            public void force() {
            }

            @Override
            public synchronized void rotate() throws IOException {
                if (failures.getAndDecrement() > 0) {
                    throw new IOException("Read-only file system");
                }
                files.add(new StringBuilder());
            }

            @Override
            public void close() {
            }
        };
        AuditLog log = AuditLog.open(dir.resolve("unused"), output, Duration.ofSeconds(10), 10,
                AuditChain.GENESIS, 0, false);
        write(log, 0, 3);
        log.close();
        assertThat(log.writeFailures()).isEqualTo(2);
        assertThat(log.rotations()).isEqualTo(2);
        assertThat(log.healthy()).isTrue();
        assertThat(files).hasSize(3);
        List<String> all = new ArrayList<>();
        for (StringBuilder f : files) {
            assertThat(f.toString().split("\n")).hasSize(1);
            all.add(f.toString().strip());
        }
        assertChained(all, AuditChain.GENESIS);
    }

    // ---- verify ----

    /** Writes 12 records into audit.jsonl.2, .1 and the active file (4 each), all kept. */
    private Path rotatedSet() throws IOException {
        Path file = dir.resolve("audit.jsonl");
        int lineBytes = record(10).toJson().length() + ",\"prev_hash\":\"\"".length() + 64 + 1;
        try (AuditLog log = AuditLog.open(file, 4L * lineBytes + 10, 10)) {
            write(log, 10, 22);
        }
        assertThat(AuditReader.files(file)).hasSize(3);
        return file;
    }

    private static void editByte(Path file, int lineIndex, String from, String to) throws IOException {
        List<String> lines = lines(file);
        String line = lines.get(lineIndex);
        assertThat(line).contains(from);
        assertThat(from).hasSameSizeAs(to);
        lines.set(lineIndex, line.replaceFirst(java.util.regex.Pattern.quote(from), to));
        Files.write(file, lines, StandardCharsets.UTF_8);
    }

    @Test
    void verifyPassesOnACleanSet() throws Exception {
        AuditVerifier.Result result = verify(rotatedSet());
        assertThat(result.ok()).isTrue();
        assertThat(result.records()).isEqualTo(12);
        assertThat(result.files()).isEqualTo(3);
        assertThat(result.startsMidChain()).isFalse();
    }

    @Test
    void oneEditedByteIsReportedOnTheNextLine() throws Exception {
        Path file = rotatedSet();
        Path middle = dir.resolve("audit.jsonl.1");
        editByte(middle, 1, "\"GET\"", "\"PUT\""); // line 2
        AuditVerifier.Result result = verify(file);
        assertThat(result.problems()).extracting(Object::toString)
                .containsExactly(middle.toAbsolutePath() + ": line 3: prev_hash does not match line 2");
    }

    @Test
    void anEditedLastLineIsReportedOnTheNextFilesFirstLine() throws Exception {
        Path file = rotatedSet();
        editByte(dir.resolve("audit.jsonl.2"), 3, "\"bytes.sent\":13", "\"bytes.sent\":19");
        AuditVerifier.Result result = verify(file);
        assertThat(result.problems()).extracting(Object::toString).containsExactly(
                dir.resolve("audit.jsonl.1").toAbsolutePath()
                        + ": line 1: prev_hash does not match the last line (line 4) of audit.jsonl.2");
    }

    @Test
    void aDeletedLineIsReported() throws Exception {
        Path file = rotatedSet();
        List<String> lines = lines(file);
        lines.remove(1); // line 2
        Files.write(file, lines, StandardCharsets.UTF_8);
        AuditVerifier.Result result = verify(file);
        assertThat(result.problems()).extracting(Object::toString)
                .containsExactly(file.toAbsolutePath() + ": line 2: prev_hash does not match line 1");
    }

    @Test
    void aDeletedFirstLineOfANewLogIsReported() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 3);
        }
        List<String> lines = lines(file);
        Files.write(file, lines.subList(1, 3), StandardCharsets.UTF_8);
        AuditVerifier.Result result = verify(file);
        assertThat(result.problems()).extracting(AuditVerifier.Problem::line).containsExactly(1L);
        assertThat(result.problems().get(0).message()).contains("not 64 zeros");
    }

    @Test
    void unparsableAndForgedLinesAreReported() throws Exception {
        Path file = dir.resolve("audit.jsonl");
        try (AuditLog log = AuditLog.open(file)) {
            write(log, 0, 4);
        }
        List<String> lines = lines(file);
        String forged = lines.get(2).replace("\"prev_hash\"", "\"prev_hash\":\"" + "1".repeat(64) + "\",\"x\"");
        lines.set(2, forged);
        Files.write(file, lines, StandardCharsets.UTF_8);
        AuditVerifier.Result result = verify(file);
        assertThat(result.problems()).extracting(Object::toString).containsExactly(
                file.toAbsolutePath() + ": line 3: unparsable record (prev_hash is not the last field)",
                file.toAbsolutePath() + ": line 4: prev_hash does not match line 3");
    }
}
