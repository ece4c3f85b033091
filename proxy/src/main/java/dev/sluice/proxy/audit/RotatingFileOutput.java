package dev.sluice.proxy.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.TreeMap;

/** Appends to a file; reopens it if the channel was closed under it (e.g. by an interrupt); rotates it. */
final class RotatingFileOutput implements AuditOutput {
    private final Path path;
    private final int keepFiles;
    private FileChannel channel;

    RotatingFileOutput(Path path, FileChannel channel, int keepFiles) {
        this.path = path;
        this.channel = channel;
        this.keepFiles = keepFiles;
    }

    /**
     * Opens {@code path} for appending, creating it {@code rw-------}; an existing file with any group
     * or other permission is set to {@code rw-------} first (records name hosts, paths and clients).
     */
    static FileChannel openAppend(Path path) throws IOException {
        if (Files.exists(path)) {
            PrivateFiles.restrict(path, PrivateFiles.FILE);
        }
        return FileChannel.open(path, Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND), PosixFilePermissions.asFileAttribute(PrivateFiles.FILE));
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        if (!channel.isOpen()) {
            channel = openAppend(path);
        }
        return channel.write(src);
    }

    @Override
    public void force() throws IOException {
        channel.force(true);
    }

    /**
     * Each step can be repeated after a failure: fsync and close the active file; delete rotated
     * files numbered keepFiles and above; shift the run .1, .2, … up by one; rename the active file
     * to .1; fsync the directory; open a new active file.
     */
    @Override
    public void rotate() throws IOException {
        if (channel.isOpen()) {
            channel.force(true);
            channel.close();
        }
        if (Files.exists(path)) {
            Path dir = path.getParent();
            String name = path.getFileName().toString();
            TreeMap<Integer, Path> rotated = AuditReader.rotated(dir, name);
            for (Path old : rotated.tailMap(keepFiles, true).descendingMap().values()) {
                Files.deleteIfExists(old);
            }
            int top = 0;
            while (top + 1 < keepFiles && rotated.containsKey(top + 1)) {
                top++;
            }
            for (int i = top; i >= 1; i--) {
                Files.move(sibling(i), sibling(i + 1), StandardCopyOption.ATOMIC_MOVE);
            }
            Files.move(path, sibling(1), StandardCopyOption.ATOMIC_MOVE);
            syncDirectory(dir);
        }
        channel = openAppend(path);
    }

    private Path sibling(int index) {
        return path.resolveSibling(path.getFileName() + "." + index);
    }

    private static void syncDirectory(Path dir) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException e) {
            // Not every platform can fsync a directory; the renames are atomic either way.
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
