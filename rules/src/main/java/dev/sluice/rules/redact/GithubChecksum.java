package dev.sluice.rules.redact;

import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * The checksum of GitHub's and npm's prefixed tokens ({@code ghp_}, {@code gho_}, {@code ghu_},
 * {@code ghs_}, {@code ghr_}, {@code npm_}): the last six characters are the CRC32 of the 30 random
 * characters before them, written in base62 (digits, then A–Z, then a–z) and left-padded with {@code 0}.
 *
 * <p>Source: GitHub blog, "Behind GitHub's new authentication token formats", 2021-04-05 (which states
 * that the last six characters are a CRC32 checksum); the exact encoding is as reimplemented by public
 * token verifiers. Because GitHub does not publish the encoding as a specification, detectors do not
 * require the checksum: a redactor prefers redacting a look-alike to passing a real token. The class
 * is used by tests to build well-formed fake tokens, and is available to callers who want to rank
 * findings.
 */
public final class GithubChecksum {

    private static final String BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    private GithubChecksum() {
    }

    /** Returns the six-character checksum of {@code random} (the token's characters between prefix and checksum). */
    public static String checksum(String random) {
        CRC32 crc = new CRC32();
        crc.update(random.getBytes(StandardCharsets.US_ASCII));
        long n = crc.getValue();
        char[] out = new char[6];
        for (int i = 5; i >= 0; i--) {
            out[i] = BASE62.charAt((int) (n % 62));
            n /= 62;
        }
        return new String(out);
    }

    /**
     * Answers whether a token of the form {@code <prefix>_<30 random><6 checksum>} carries a valid
     * checksum.
     */
    public static boolean isValid(String token) {
        int underscore = token.lastIndexOf('_');
        if (underscore < 0 || token.length() - underscore - 1 != 36) {
            return false;
        }
        String body = token.substring(underscore + 1);
        return checksum(body.substring(0, 30)).equals(body.substring(30));
    }
}
