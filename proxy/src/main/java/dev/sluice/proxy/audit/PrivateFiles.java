package dev.sluice.proxy.audit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Modes of the files Sluice keeps private: the data directory ({@code rwx------}) and the audit log
 * with its rotations ({@code rw-------}). Audit records name clients, hosts and paths; the data
 * directory also holds the CA key and the pin store. Public trust material (the CA certificate and the
 * bundle that {@code sluice env} names) is written elsewhere or readable on purpose; see docs/certs.md.
 */
public final class PrivateFiles {

    private static final Logger log = LoggerFactory.getLogger(PrivateFiles.class);

    /** {@code rw-------}. */
    public static final Set<PosixFilePermission> FILE = Set.copyOf(PosixFilePermissions.fromString("rw-------"));
    /** {@code rwx------}. */
    public static final Set<PosixFilePermission> DIRECTORY = Set.copyOf(PosixFilePermissions.fromString("rwx------"));

    private PrivateFiles() {
    }

    /**
     * Creates {@code dir} (and missing parents) {@code rwx------}, or, when it exists, removes every group
     * and other permission from it (logged once at WARN with the old mode). A file system without POSIX
     * permissions is left as it is.
     *
     * @throws IOException when the directory cannot be created or its mode cannot be set
     */
    public static void directory(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIRECTORY));
            restrict(dir, DIRECTORY);
            return;
        }
        restrict(dir, DIRECTORY);
    }

    /**
     * Sets {@code path}'s mode to {@code mode} when it has any permission outside the owner's (or differs
     * from {@code mode} in the owner's bits only by extra group/other bits); logs the change at WARN.
     *
     * @throws IOException when the mode cannot be read or set
     */
    public static void restrict(Path path, Set<PosixFilePermission> mode) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
        if (view == null) {
            return;
        }
        Set<PosixFilePermission> current = view.readAttributes().permissions();
        Set<PosixFilePermission> shared = EnumSet.noneOf(PosixFilePermission.class);
        for (PosixFilePermission p : current) {
            if (!p.name().startsWith("OWNER_")) {
                shared.add(p);
            }
        }
        if (shared.isEmpty() && current.containsAll(mode)) {
            return;
        }
        view.setPermissions(mode);
        if (!shared.isEmpty()) {
            log.warn("{} was mode {}; set to {} (it is private to Sluice's user)", path,
                    PosixFilePermissions.toString(current), PosixFilePermissions.toString(mode));
        }
    }
}
