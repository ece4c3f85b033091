package dev.sluice.rules.credential;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.HexFormat;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * Placeholders: what an extension holds in place of a real credential (docs/credentials.md). A
 * placeholder is {@code sluice-cred-<credential>-<32 hex digits>}: the digits are the first 128 bits
 * of HMAC-SHA256 (RFC 2104) under the 256-bit placeholder key, over the extension's and the
 * credential's names. So it is stable across restarts (same key), different per extension, and
 * carries nothing of the secret.
 */
public final class Placeholders {

    /** What every placeholder starts with. */
    public static final String PREFIX = "sluice-cred-";

    /** The shape of any placeholder, ours or not: prefix, a credential name, a dash, 32 hex digits. */
    public static final Pattern SHAPE = Pattern.compile("sluice-cred-[A-Za-z0-9][A-Za-z0-9._-]{0,63}-[0-9a-f]{32}",
            Pattern.CASE_INSENSITIVE);

    /** Length of the placeholder key, in bytes. */
    public static final int KEY_BYTES = 32;

    private final byte[] key;

    /**
     * @param key the 32-byte placeholder key
     * @throws IllegalArgumentException when {@code key} is not 32 bytes
     */
    public Placeholders(byte @Nullable [] key) {
        if (key == null || key.length != KEY_BYTES) {
            throw new IllegalArgumentException("placeholder key: expected " + KEY_BYTES + " bytes");
        }
        this.key = key.clone();
    }

    /** Returns the placeholder of {@code credential} for {@code extension}. */
    public String placeholder(String extension, String credential) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update("sluice-cred/v1".getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            mac.update(extension.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            byte[] digest = mac.doFinal(credential.getBytes(StandardCharsets.UTF_8));
            return PREFIX + credential + "-" + HexFormat.of().formatHex(digest, 0, 16);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is required by every Java platform", e);
        }
    }

    @Override
    public String toString() {
        return "Placeholders[key=****]";
    }
}
