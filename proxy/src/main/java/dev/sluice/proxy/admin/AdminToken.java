package dev.sluice.proxy.admin;

import org.jspecify.annotations.Nullable;
import dev.sluice.proxy.audit.PrivateFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * The bearer token that the admin listener's approval endpoints require ({@code Authorization: Bearer
 * <token>}, RFC 6750): 256 random bits, base64url without padding (43 characters), kept in
 * {@value #FILE_NAME} in the data dir, mode {@code rw-------}. Whoever can read the data dir (the CA key
 * is there too) may answer approvals; a sandbox never can. Created on the first start with an admin
 * listener and kept across restarts, so {@code sluice approvals} keeps working.
 */
public final class AdminToken {

    /** The token file's name in the data dir. */
    public static final String FILE_NAME = "admin.token";

    private final byte[] token;

    private AdminToken(String token) {
        this.token = token.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Reads the token from {@code dataDir}, creating it (and the data dir, {@code rwx------}) when absent.
     *
     * @throws IOException when the file cannot be read or written, or is empty
     */
    public static AdminToken loadOrCreate(Path dataDir) throws IOException {
        PrivateFiles.directory(dataDir);
        Path file = dataDir.resolve(FILE_NAME);
        if (!Files.exists(file)) {
            byte[] random = new byte[32];
            new SecureRandom().nextBytes(random);
            String fresh = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
            try {
                Files.write(Files.createFile(file, PosixFilePermissions.asFileAttribute(PrivateFiles.FILE)),
                        (fresh + "\n").getBytes(StandardCharsets.US_ASCII), StandardOpenOption.TRUNCATE_EXISTING);
            } catch (FileAlreadyExistsException raced) {
                // Another process created it first: use theirs.
            }
        }
        return new AdminToken(read(dataDir));
    }

    /**
     * Reads the token a running Sluice created in {@code dataDir} (for the CLI).
     *
     * @throws IOException when there is no token file (no Sluice with an admin listener used this data
     *                     dir), it cannot be read, or it is empty
     */
    public static String read(Path dataDir) throws IOException {
        Path file = dataDir.resolve(FILE_NAME);
        PrivateFiles.restrict(file, PrivateFiles.FILE);
        String text = Files.readString(file, StandardCharsets.US_ASCII).trim();
        if (text.isEmpty()) {
            throw new IOException(file + " is empty");
        }
        return text;
    }

    /**
     * Answers whether an {@code Authorization} field value is {@code Bearer <this token>} (the scheme
     * case-insensitive), comparing in constant time.
     *
     * @param authorization the field value, or null when absent
     */
    public boolean accepts(@Nullable String authorization) {
        if (authorization == null || authorization.length() < 7
                || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        byte[] given = authorization.substring(7).trim().getBytes(StandardCharsets.US_ASCII);
        return MessageDigest.isEqual(given, token);
    }

    @Override
    public String toString() {
        return "AdminToken[****]";
    }
}
