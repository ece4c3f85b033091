package dev.sluice.rules.policy;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The {@code audit} section, with the documented defaults for anything not written.
 *
 * <p>Retention: at most {@code keepFiles} rotated files plus the active one are kept, so the log
 * takes at most about {@code (keepFiles + 1) × maxFileBytes} bytes on disk ({@code keepFiles ×
 * maxFileBytes} of history).
 *
 * @param path the audit log file; a relative path is resolved against the data dir by the caller
 *     (default {@code audit.jsonl})
 * @param maxFileBytes the size in bytes the active file may reach before it is rotated (default 64 MiB);
 *     a single record larger than this still goes into a file of its own
 * @param keepFiles how many rotated files ({@code audit.jsonl.1} … {@code .N}) are kept; older ones are
 *     deleted at rotation (default 10)
 * @param format how records look on standard output and in the OTLP export: {@code sluice} (the file's
 *     flat dotted fields) or {@code ocsf} (OCSF HTTP Activity / Network Activity); the file always keeps
 *     Sluice's own form (default {@code sluice})
 * @param stdout whether every record is also written to standard output, one JSON line each, for a
 *     cluster's log pipeline (default false)
 */
public record AuditSettings(Path path, long maxFileBytes, int keepFiles, Format format, boolean stdout) {

    /** {@code audit.format}: the shape of records on standard output and in the OTLP export. */
    public enum Format {
        /** Sluice's flat dotted fields, as in the file (docs/audit.md "Record"). */
        SLUICE,
        /** OCSF 1.x: HTTP Activity (class 4002) for HTTP requests, Network Activity (4001) for tunnels. */
        OCSF;

        /** Returns the policy spelling, {@code sluice} or {@code ocsf}. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** Default {@code audit.path}. */
    public static final Path DEFAULT_PATH = Path.of("audit.jsonl");
    /** Default {@code audit.max_file_bytes}: 64 MiB. */
    public static final long DEFAULT_MAX_FILE_BYTES = 64L << 20;
    /** Default {@code audit.keep_files}. */
    public static final int DEFAULT_KEEP_FILES = 10;
    /** Largest {@code audit.keep_files}. */
    public static final int MAX_KEEP_FILES = 1000;

    /** The settings a policy without an {@code audit} section gets. */
    public static final AuditSettings DEFAULT =
            new AuditSettings(DEFAULT_PATH, DEFAULT_MAX_FILE_BYTES, DEFAULT_KEEP_FILES);

    /** Settings with the default {@code format} ({@code sluice}) and no standard-output copy. */
    public AuditSettings(Path path, long maxFileBytes, int keepFiles) {
        this(path, maxFileBytes, keepFiles, Format.SLUICE, false);
    }

    /**
     * Validates the values.
     *
     * @throws IllegalArgumentException if {@code maxFileBytes < 1} or {@code keepFiles} is not
     *     1..{@value #MAX_KEEP_FILES}
     */
    public AuditSettings {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(format, "format");
        if (maxFileBytes < 1) {
            throw new IllegalArgumentException("maxFileBytes: " + maxFileBytes + " (expected: > 0)");
        }
        if (keepFiles < 1 || keepFiles > MAX_KEEP_FILES) {
            throw new IllegalArgumentException("keepFiles: " + keepFiles + " (expected: 1.." + MAX_KEEP_FILES + ")");
        }
    }
}
