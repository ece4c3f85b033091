package dev.sluice.certs;

import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The CA private key file grants group or others any access (its mode is not {@code 0600} or
 * stricter), so it may already have been read by someone else. Sluice refuses to use it.
 */
public final class CaKeyPermissionsException extends CaException {

    private final Path keyFile;
    private final String mode;

    /** Creates the exception for {@code keyFile} with the permissions found on it. */
    public CaKeyPermissionsException(Path keyFile, Set<PosixFilePermission> found) {
        super(keyFile + ": mode " + PosixFilePermissions.toString(found)
                + " lets group or others access the CA key (expected: rw------- (0600); fix with "
                + "'chmod 600 " + keyFile + "', or create a new CA with 'sluice ca init --force' if "
                + "the key may have been read)");
        this.keyFile = keyFile;
        this.mode = PosixFilePermissions.toString(found);
    }

    /** Returns the key file. */
    public Path keyFile() {
        return keyFile;
    }

    /** Returns the mode found, as {@code ls -l} prints it, e.g. {@code rw-r--r--}. */
    public String mode() {
        return mode;
    }
}
