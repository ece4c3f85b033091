package dev.sluice.certs;

import dev.sluice.certs.internal.AtomicFiles;
import dev.sluice.hosts.CanonicalHost;
import dev.sluice.certs.internal.FlatJson;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Trust-on-first-use pin records, one JSON file per host in {@code <data dir>/pins/}:
 * <pre>{@code
 * {"host":"api.anthropic.com","pins":["sha256/...","sha256/..."],"recorded_at":"2026-11-30T09:41:15.123Z"}
 * }</pre>
 * The file name is the canonical host with {@code :} written {@code %3A} (IPv6 literals) plus
 * {@code .json}; {@code %} never occurs in a host, so names cannot collide, and the host is checked
 * canonical first, so a name can never leave the directory.
 *
 * <p>Writes are atomic and durable (temporary file, fsync, {@code link(2)} or {@code rename(2)}, fsync of
 * the directory): a reader sees no record or a whole one. {@link #recordIfAbsent} is first-writer-wins
 * across threads and processes. Reads go to the file every time, so {@code sluice pins reset} takes
 * effect in a running Sluice at its next upstream handshake. Every method does blocking file I/O: call
 * it off the event loop (the pinning trust manager runs inside the TLS handshake, which Netty can
 * delegate to an executor).
 *
 * <p>Thread-safe; holds no state besides the directory.
 */
public final class PinStore {

    /** Subdirectory of the data directory holding the records. */
    public static final String DIRECTORY = "pins";

    private static final String SUFFIX = ".json";

    private final Path directory;
    private final Clock clock;

    private PinStore(Path directory, Clock clock) {
        this.directory = directory;
        this.clock = clock;
    }

    /**
     * Opens the store in {@code dataDir}/{@value #DIRECTORY}, creating the directory (mode {@code 0700})
     * if needed.
     *
     * @throws IOException if the directory cannot be created
     */
    public static PinStore open(Path dataDir) throws IOException {
        return open(dataDir, Clock.systemUTC());
    }

    /** As {@link #open(Path)}, with the clock that stamps {@code recorded_at}. */
    public static PinStore open(Path dataDir, Clock clock) throws IOException {
        Objects.requireNonNull(dataDir, "dataDir");
        Objects.requireNonNull(clock, "clock");
        Path dir = dataDir.resolve(DIRECTORY);
        AtomicFiles.createPrivateDirectories(dir);
        return new PinStore(dir, clock);
    }

    /**
     * Returns the pins recorded for {@code host}, if any.
     *
     * @throws IllegalArgumentException if {@code host} is not canonical
     * @throws IOException if the record exists but cannot be read or is malformed (callers fail closed)
     */
    public Optional<List<String>> pinsFor(String host) throws IOException {
        return read(host).map(PinRecord::pins);
    }

    /**
     * Records {@code pins} for {@code host} unless a record exists, atomically: of concurrent callers,
     * in this process or another, exactly one writes.
     *
     * @return the pins in force afterwards: {@code pins} if this call recorded them, else the existing ones
     * @throws IllegalArgumentException if {@code host} is not canonical or a pin is malformed or
     *     {@code pins} is empty
     * @throws IOException if the record cannot be written or the existing one read
     */
    public List<String> recordIfAbsent(String host, List<String> pins) throws IOException {
        PinRecord record = new PinRecord(CanonicalHost.of(host).text(), pins,
                clock.instant().truncatedTo(ChronoUnit.MILLIS));
        if (AtomicFiles.writeNew(fileOf(host), encode(record), AtomicFiles.PUBLIC_READ)) {
            return record.pins();
        }
        return read(host).map(PinRecord::pins)
                .orElseThrow(() -> new IOException(fileOf(host) + ": existed a moment ago, now gone "
                        + "(a concurrent 'sluice pins reset'?)"));
    }

    /**
     * Deletes the record of {@code host}; its next validated chain is recorded afresh.
     *
     * @return whether a record existed
     * @throws IllegalArgumentException if {@code host} is not canonical
     */
    public boolean reset(String host) throws IOException {
        return AtomicFiles.delete(fileOf(host));
    }

    /**
     * Returns every record, by host in lexicographic order (for {@code sluice pins show}).
     *
     * @throws IOException if the directory cannot be listed or a record is unreadable or malformed
     */
    public Map<String, PinRecord> all() throws IOException {
        Map<String, PinRecord> out = new TreeMap<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*" + SUFFIX)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                if (name.startsWith(".")) {
                    continue; // a temporary file of a writer, or left by a crash
                }
                String host = name.substring(0, name.length() - SUFFIX.length()).replace("%3A", ":");
                try {
                    CanonicalHost.of(host);
                } catch (IllegalArgumentException e) {
                    throw new IOException(f + ": not the record of a canonical host: " + e.getMessage(), e);
                }
                Optional<PinRecord> r = read(host);
                r.ifPresent(rec -> out.put(rec.host(), rec));
            }
        }
        return out;
    }

    /** Returns the directory holding the records. */
    public Path directory() {
        return directory;
    }

    private Optional<PinRecord> read(String host) throws IOException {
        Path file = fileOf(host);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        try {
            Map<String, Object> json = FlatJson.parse(text);
            Object h = json.get("host");
            Object pins = json.get("pins");
            Object at = json.get("recorded_at");
            if (!(h instanceof String) || !(pins instanceof List) || !(at instanceof String)
                    || json.size() != 3) {
                throw new IllegalArgumentException("expected exactly the keys host (string), pins (array) "
                        + "and recorded_at (string)");
            }
            if (!h.equals(host)) {
                throw new IllegalArgumentException("host '" + h + "' in the file of " + host);
            }
            @SuppressWarnings("unchecked")
            List<String> list = (List<String>) pins;
            return Optional.of(new PinRecord(host, list, Instant.parse((String) at)));
        } catch (IllegalArgumentException | DateTimeParseException e) {
            throw new IOException(file + ": malformed pin record: " + e.getMessage()
                    + " (fix or delete it with 'sluice pins reset " + host + "')", e);
        }
    }

    private Path fileOf(String host) {
        return directory.resolve(CanonicalHost.of(host).text().replace(":", "%3A") + SUFFIX);
    }

    private static byte[] encode(PinRecord r) {
        StringBuilder sb = new StringBuilder(128);
        sb.append("{\"host\":").append(FlatJson.quote(r.host())).append(",\"pins\":[");
        for (int i = 0; i < r.pins().size(); i++) {
            sb.append(i == 0 ? "" : ",").append(FlatJson.quote(r.pins().get(i)));
        }
        sb.append("],\"recorded_at\":").append(FlatJson.quote(r.recordedAt().toString())).append("}\n");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }
}
