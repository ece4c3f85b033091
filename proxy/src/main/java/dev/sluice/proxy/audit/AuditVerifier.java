package dev.sluice.proxy.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Checks the hash chain of an audit log ({@link AuditChain}) over one file or a rotated set, in the
 * order {@link AuditReader#files(Path)} gives.
 *
 * <p>Every line must be one JSON object whose last field is {@code prev_hash}, 64 lowercase hex
 * digits, equal to the SHA-256 of the line before it — the previous line of the same file, or for
 * the first line of a file, the last line of the file before it in the set. The first record of the
 * set must carry 64 zeros, unless the first file is a rotated file ({@code name.N}): then its
 * predecessor was rotated away by retention and the chain is checked from there
 * ({@link Result#startsMidChain()}).
 *
 * <p>Problems: an unparsable line (not one JSON object, duplicate keys, no {@code prev_hash}, or
 * {@code prev_hash} not last), a partial last line (no {@code \n}), and a record whose
 * {@code prev_hash} does not match. An edited byte in line k shows as "line k+1: prev_hash does not
 * match line k"; a deleted line k as "line k: prev_hash does not match line k-1". After a mismatch the
 * check continues from the line as it is, so one edit is reported once. After an unparsable line, the
 * next record may match either that line or the last good record before it (that is how the writer
 * continues after a partial line left by a crash); the unparsable line itself is reported either way.
 */
public final class AuditVerifier {

    /** At most this many problems are kept in a {@link Result}; all are counted. */
    public static final int MAX_PROBLEMS_KEPT = 100;

    private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");
    private static final JsonFactory JSON = JsonFactory.builder()
            .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /**
     * One problem found.
     *
     * @param file the file
     * @param line the line number in that file, from 1
     * @param message what is wrong, e.g. {@code prev_hash does not match line 4}
     */
    public record Problem(Path file, long line, String message) {
        /** Returns {@code FILE: line N: MESSAGE}. */
        @Override
        public String toString() {
            return file + ": line " + line + ": " + message;
        }
    }

    /**
     * The outcome of a check.
     *
     * @param files how many files were read
     * @param records how many lines parsed as records
     * @param problemCount how many problems were found
     * @param problems the first {@value #MAX_PROBLEMS_KEPT} problems, in file order
     * @param startsMidChain true when the first record does not carry 64 zeros because the first file
     *     is a rotated file whose predecessor is gone
     */
    public record Result(int files, long records, long problemCount, List<Problem> problems,
                         boolean startsMidChain) {
        public Result {
            problems = List.copyOf(problems);
        }

        /** Answers whether the chain is intact and every line is a record. */
        public boolean ok() {
            return problemCount == 0;
        }
    }

    private AuditVerifier() {
    }

    /**
     * Checks the chain across {@code files}, oldest first.
     *
     * @throws IOException if a file cannot be read
     */
    public static Result verify(List<Path> files) throws IOException {
        Objects.requireNonNull(files, "files");
        State s = new State();
        AuditReader.readLines(files, s::accept);
        return new Result(files.size(), s.records, s.problemCount, s.problems, s.startsMidChain);
    }

    private static final class State {
        final List<Problem> problems = new ArrayList<>();
        long problemCount;
        long records;
        boolean startsMidChain;
        // The line just before the current one, in set order.
        String prevLineHash;
        Path prevFile;
        long prevNumber;
        boolean prevWasBad;
        // The last line that parsed as a record.
        String lastRecordHash;

        void accept(AuditReader.Line line) {
            String hash = AuditChain.sha256Hex(line.bytes());
            String error;
            String prevHash = null;
            if (!line.terminated()) {
                error = "partial record (no newline at the end of the file)";
            } else {
                try {
                    prevHash = prevHashOf(line.bytes());
                    error = null;
                } catch (JsonProcessingException e) {
                    error = "unparsable record (" + e.getOriginalMessage() + ")";
                } catch (IOException e) {
                    error = "unparsable record (" + e.getMessage() + ")";
                }
            }
            if (error != null) {
                problem(line, error);
            } else {
                records++;
                check(line, prevHash);
            }
            prevLineHash = hash;
            prevFile = line.file();
            prevNumber = line.number();
            prevWasBad = error != null;
            if (error == null) {
                lastRecordHash = hash;
            }
        }

        private void check(AuditReader.Line line, String prevHash) {
            if (prevLineHash == null) {
                if (!prevHash.equals(AuditChain.GENESIS)) {
                    if (AuditReader.isRotatedName(line.file())) {
                        startsMidChain = true;
                    } else {
                        problem(line, "prev_hash is not 64 zeros, but this is the first record of the log "
                                + "(earlier records are missing)");
                    }
                }
                return;
            }
            if (prevHash.equals(prevLineHash)) {
                return;
            }
            if (prevWasBad && prevHash.equals(lastRecordHash == null ? AuditChain.GENESIS : lastRecordHash)) {
                return;
            }
            String what = prevFile.equals(line.file())
                    ? "line " + prevNumber
                    : "the last line (line " + prevNumber + ") of " + prevFile.getFileName();
            problem(line, "prev_hash does not match " + what);
        }

        private void problem(AuditReader.Line line, String message) {
            problemCount++;
            if (problems.size() < MAX_PROBLEMS_KEPT) {
                problems.add(new Problem(line.file(), line.number(), message));
            }
        }
    }

    /**
     * Returns the {@code prev_hash} of one line.
     *
     * @throws IOException with a short message if the line is not one JSON object ending in a valid
     *     {@code prev_hash}
     */
    static String prevHashOf(byte[] line) throws IOException {
        try (JsonParser p = JSON.createParser(line)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("not a JSON object");
            }
            String last = null;
            String value = null;
            for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                if (AuditFields.PREV_HASH.equals(name)) {
                    value = v == JsonToken.VALUE_STRING ? p.getText() : "";
                }
                if (v.isStructStart()) {
                    p.skipChildren();
                }
                last = name;
            }
            if (p.nextToken() != null) {
                throw new IOException("more than one JSON value on the line");
            }
            if (value == null) {
                throw new IOException("no prev_hash");
            }
            if (!AuditFields.PREV_HASH.equals(last)) {
                throw new IOException("prev_hash is not the last field");
            }
            if (!HEX64.matcher(value).matches()) {
                throw new IOException("prev_hash is not 64 lowercase hex digits");
            }
            return value;
        }
    }
}
