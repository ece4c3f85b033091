package dev.sluice.proxy.audit;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads an audit log (JSON Lines) as raw lines, over one file or a rotated set.
 *
 * <p>A rotated set is the active file {@code audit.jsonl} and its rotated siblings in the same
 * directory, {@code audit.jsonl.1} (the newest rotated) to {@code audit.jsonl.N} (the oldest).
 * {@link #files(Path)} lists them oldest to newest — {@code .N}, …, {@code .1}, then the active file —
 * which is the order in which the records were written. Gaps in the numbering are skipped.
 *
 * <p>Lines are handed over as bytes exactly as stored, without the {@code \n}, numbered from 1 in each
 * file; a last line without a {@code \n} (a record cut short) is handed over with
 * {@link Line#terminated()} false. The reader does not parse JSON.
 */
public final class AuditReader {

    private static final Pattern ROTATED = Pattern.compile("(.+)\\.([0-9]{1,9})");

    /**
     * One line of an audit file.
     *
     * @param file the file it is in
     * @param number its line number in that file, from 1
     * @param bytes its bytes (UTF-8) without the {@code \n}
     * @param terminated false for a last line that has no {@code \n}
     */
    public record Line(Path file, long number, byte[] bytes, boolean terminated) {

        /** Returns the line decoded as UTF-8. */
        public String text() {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    }

    /** Receives lines in order. */
    @FunctionalInterface
    public interface LineHandler {
        /** Handles one line; may throw to stop reading. */
        void accept(Line line) throws IOException;
    }

    private AuditReader() {
    }

    /**
     * Returns the files of the rotated set whose active file is {@code active}, oldest first:
     * {@code active.N}, …, {@code active.1}, then {@code active} itself if it exists.
     *
     * @throws IOException if the directory cannot be listed
     */
    public static List<Path> files(Path active) throws IOException {
        Objects.requireNonNull(active, "active");
        Path absolute = active.toAbsolutePath();
        Path dir = absolute.getParent();
        String name = absolute.getFileName().toString();
        List<Path> out = new ArrayList<>();
        rotated(dir, name).descendingMap().values().forEach(out::add);
        if (Files.isRegularFile(absolute)) {
            out.add(absolute);
        }
        return out;
    }

    /**
     * Returns what to read for a {@code --file} argument: a rotated file ({@code name.N}) alone, or
     * otherwise the rotated set whose active file it is ({@link #files(Path)}).
     */
    public static List<Path> filesFor(Path file) throws IOException {
        Path absolute = file.toAbsolutePath();
        if (isRotatedName(absolute) && Files.isRegularFile(absolute)) {
            return List.of(absolute);
        }
        return files(absolute);
    }

    /** Answers whether {@code file}'s name ends in {@code .<digits>}, the name of a rotated file. */
    public static boolean isRotatedName(Path file) {
        return ROTATED.matcher(file.getFileName().toString()).matches();
    }

    /** Returns the rotated siblings of the active file {@code name} in {@code dir}, by index. */
    static TreeMap<Integer, Path> rotated(Path dir, String name) throws IOException {
        TreeMap<Integer, Path> byIndex = new TreeMap<>();
        if (dir == null || !Files.isDirectory(dir)) {
            return byIndex;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir, name + ".*")) {
            for (Path p : entries) {
                Matcher m = ROTATED.matcher(p.getFileName().toString());
                if (m.matches() && m.group(1).equals(name) && Files.isRegularFile(p)) {
                    int index = Integer.parseInt(m.group(2));
                    if (index > 0) {
                        byIndex.put(index, p);
                    }
                }
            }
        }
        return byIndex;
    }

    /**
     * Reads every line of every file in order.
     *
     * @throws IOException if a file cannot be read, or as thrown by {@code handler}
     */
    public static void readLines(List<Path> files, LineHandler handler) throws IOException {
        for (Path f : files) {
            readLines(f, handler);
        }
    }

    /**
     * Reads every line of {@code file} in order.
     *
     * @throws IOException if the file cannot be read, or as thrown by {@code handler}
     */
    public static void readLines(Path file, LineHandler handler) throws IOException {
        Objects.requireNonNull(handler, "handler");
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 64 * 1024)) {
            ByteArrayOutputStream line = new ByteArrayOutputStream(512);
            byte[] buf = new byte[64 * 1024];
            long number = 0;
            int n;
            while ((n = in.read(buf)) > 0) {
                int start = 0;
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        line.write(buf, start, i - start);
                        handler.accept(new Line(file, ++number, line.toByteArray(), true));
                        line.reset();
                        start = i + 1;
                    }
                }
                line.write(buf, start, n - start);
            }
            if (line.size() > 0) {
                handler.accept(new Line(file, ++number, line.toByteArray(), false));
            }
        }
    }
}
