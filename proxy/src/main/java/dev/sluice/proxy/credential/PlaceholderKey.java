package dev.sluice.proxy.credential;

import dev.sluice.proxy.audit.PrivateFiles;
import dev.sluice.rules.credential.Placeholders;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;

/**
 * The 256-bit secret placeholders are derived from: {@code <data-dir>/credential-placeholder.key}, 32
 * random bytes, {@code rw-------}, created on first start. Keeping it keeps every placeholder (so
 * sandboxes need no restart); deleting it changes all of them.
 */
public final class PlaceholderKey {

    /** The key's file name in the data dir. */
    public static final String FILE_NAME = "credential-placeholder.key";

    private PlaceholderKey() {
    }

    /**
     * Reads the key from {@code dataDir}, creating it (and the data dir) when absent.
     *
     * @throws IOException when it cannot be read or written, or is not 32 bytes
     */
    public static Placeholders loadOrCreate(Path dataDir) throws IOException {
        PrivateFiles.directory(dataDir);
        Path file = dataDir.resolve(FILE_NAME);
        if (!Files.exists(file)) {
            byte[] random = new byte[Placeholders.KEY_BYTES];
            new SecureRandom().nextBytes(random);
            try {
                Files.write(Files.createFile(file, PosixFilePermissions.asFileAttribute(PrivateFiles.FILE)), random);
            } catch (FileAlreadyExistsException raced) {
                // another process created it first: use theirs
            }
        }
        PrivateFiles.restrict(file, PrivateFiles.FILE);
        byte[] key = Files.readAllBytes(file);
        if (key.length != Placeholders.KEY_BYTES) {
            throw new IOException(file + ": " + key.length + " bytes (expected " + Placeholders.KEY_BYTES
                    + "; delete it to make a new key, which changes every placeholder)");
        }
        return new Placeholders(key);
    }
}
