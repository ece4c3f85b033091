package dev.sluice.certs.internal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Objects;
import java.util.Set;

/**
 * Writes files so that readers only ever see nothing or the whole content: the bytes go to a temporary
 * file in the target's directory (created with its final POSIX permissions, so the content is never
 * readable with looser ones), are forced to disk, and the temporary file is then linked or renamed onto
 * the target name; finally the directory is forced so the new name survives a crash.
 *
 * <p>Temporary files are named {@code .<target name>.<random>.tmp}; a crash can leave one behind,
 * never a partial target.
 */
public final class AtomicFiles {

    /** {@code rw-------}: private keys. */
    public static final Set<PosixFilePermission> OWNER_ONLY = Set.copyOf(PosixFilePermissions.fromString("rw-------"));
    /** {@code rw-r--r--}: public material (certificates, pins). */
    public static final Set<PosixFilePermission> PUBLIC_READ = Set.copyOf(PosixFilePermissions.fromString("rw-r--r--"));
    /** {@code rwx------}: the data directory and its subdirectories. */
    public static final Set<PosixFilePermission> DIR_OWNER_ONLY = Set.copyOf(PosixFilePermissions.fromString("rwx------"));

    private AtomicFiles() {
    }

    /**
     * Writes {@code content} to {@code target} only if {@code target} does not exist. The check and the
     * creation are one step (a hard link, {@code link(2)}, which fails when the name exists), so of two
     * concurrent writers, in this process or another, exactly one wins.
     *
     * @return {@code true} if this call created {@code target}, {@code false} if it already existed
     * @throws IOException if the file cannot be written (the target is then left untouched)
     */
    public static boolean writeNew(Path target, byte[] content, Set<PosixFilePermission> mode)
            throws IOException {
        Path tmp = writeTemp(target, content, mode);
        try {
            Files.createLink(target, tmp);
        } catch (FileAlreadyExistsException e) {
            return false;
        } finally {
            Files.deleteIfExists(tmp);
        }
        syncDirectory(target.toAbsolutePath().getParent());
        return true;
    }

    /**
     * Writes {@code content} to {@code target}, replacing any existing file in one atomic rename
     * ({@code rename(2)}).
     *
     * @throws IOException if the file cannot be written (the target is then left untouched)
     */
    public static void replace(Path target, byte[] content, Set<PosixFilePermission> mode) throws IOException {
        Path tmp = writeTemp(target, content, mode);
        try {
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        syncDirectory(target.toAbsolutePath().getParent());
    }

    /**
     * Deletes {@code target} if it exists and forces the directory.
     *
     * @return whether a file was deleted
     */
    public static boolean delete(Path target) throws IOException {
        boolean deleted = Files.deleteIfExists(target);
        if (deleted) {
            syncDirectory(target.toAbsolutePath().getParent());
        }
        return deleted;
    }

    /**
     * Creates {@code dir} (and missing parents) with mode {@code rwx------} if it does not exist; an
     * existing directory is left as it is.
     */
    public static void createPrivateDirectories(Path dir) throws IOException {
        Objects.requireNonNull(dir, "dir");
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR_OWNER_ONLY));
        }
    }

    private static Path writeTemp(Path target, byte[] content, Set<PosixFilePermission> mode) throws IOException {
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(content, "content");
        Path dir = target.toAbsolutePath().getParent();
        Path tmp = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp",
                PosixFilePermissions.asFileAttribute(mode));
        try {
            // The creation mode can only have lost bits to the umask; set it exactly before any write.
            Files.setPosixFilePermissions(tmp, mode);
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(content);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            return tmp;
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
    }

    private static void syncDirectory(Path dir) {
        // Forcing a directory is how a rename becomes durable on Linux; some platforms refuse to open a
        // directory for reading, where the rename is as durable as the platform makes it anyway.
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | UnsupportedOperationException ignored) {
            // best effort, see above
        }
    }
}
