package dev.sluice.rules.redact;

import dev.sluice.rules.redact.BodyFormat;
import java.nio.charset.StandardCharsets;
import java.util.Random;

/**
 * Made-up credentials of the right shape, built at run time from a seeded generator so that no source
 * file contains a string a secret scanner would take for a real key. None of them is a real credential.
 */
final class Fakes {
    static final String UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static final String LOWER = "abcdefghijklmnopqrstuvwxyz";
    static final String DIGITS = "0123456789";
    static final String ALNUM = UPPER + LOWER + DIGITS;
    static final String URLSAFE = ALNUM + "_-";
    static final String B64 = ALNUM + "+/";
    static final String HEX = "0123456789abcdef";
    static final String BASE32 = UPPER + "234567";

    private final Random random;

    Fakes(long seed) {
        random = new Random(seed);
    }

    String of(String alphabet, int n) {
        StringBuilder b = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            b.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return b.toString();
    }

    /** A GitHub-style token: prefix, 30 random base62 characters, their 6-character checksum. */
    String github(String prefix) {
        String random30 = of(ALNUM, 30);
        return prefix + random30 + GithubChecksum.checksum(random30);
    }

    /** A fake PEM body of {@code lines} 64-character base64 lines joined by {@code newline}. */
    String pemBody(int lines, String newline) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < lines; i++) {
            b.append(of(B64, 64)).append(newline);
        }
        return b.toString();
    }

    static String pem(String kind, String body, String newline) {
        String label = kind.isEmpty() ? "PRIVATE KEY" : kind + " PRIVATE KEY";
        return "-----BEGIN " + label + "-----" + newline + body + "-----END " + label + "-----";
    }

    /** Runs text through a fresh redactor of {@code set}, in one chunk. */
    static Run run(DetectorSet set, BodyFormat format, RedactionAction action, String text) {
        StreamingRedactor r = set.newRedactor(format, action, Long.MAX_VALUE);
        try {
            byte[] a = r.feed(text.getBytes(StandardCharsets.UTF_8));
            byte[] b = r.finish();
            return new Run(new String(a, StandardCharsets.UTF_8) + new String(b, StandardCharsets.UTF_8), r);
        } catch (BodyTooLargeException e) {
            throw new AssertionError(e);
        }
    }

    record Run(String output, StreamingRedactor redactor) {
    }

    /** JSON string literal of {@code s}, escaping as aggressively as some serializers do. */
    static String jsonString(String s, boolean escapeSlash, boolean escapeAllNonAlnum) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') {
                b.append("\\\"");
            } else if (c == '\\') {
                b.append("\\\\");
            } else if (c == '\n') {
                b.append("\\n");
            } else if (c == '\r') {
                b.append("\\r");
            } else if (c == '\t') {
                b.append("\\t");
            } else if (c == '/' && escapeSlash) {
                b.append("\\/");
            } else if (c < 0x20 || c >= 0x7f || (escapeAllNonAlnum && !Character.isLetterOrDigit(c))) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
