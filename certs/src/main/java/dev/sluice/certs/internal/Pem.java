package dev.sluice.certs.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;

/**
 * Textual encoding of DER structures as PEM, the strict form of RFC 7468 section 3: a
 * {@code -----BEGIN label-----} line, base64 (RFC 4648 section 4, standard alphabet, padded) in lines
 * of exactly 64 characters except the last, and a matching {@code -----END label-----} line. Lines
 * end in {@code \n}.
 */
public final class Pem {

    /** Label of an X.509 certificate (RFC 7468 section 5). */
    public static final String CERTIFICATE = "CERTIFICATE";
    /** Label of an unencrypted PKCS #8 private key (RFC 7468 section 10). */
    public static final String PRIVATE_KEY = "PRIVATE KEY";

    private static final int LINE = 64;

    private Pem() {
    }

    /** Returns {@code der} as one PEM block with {@code label}, ending in a newline. */
    public static String encode(String label, byte[] der) {
        Objects.requireNonNull(label, "label");
        Objects.requireNonNull(der, "der");
        String b64 = Base64.getEncoder().encodeToString(der);
        StringBuilder out = new StringBuilder(b64.length() + b64.length() / LINE + 64);
        out.append("-----BEGIN ").append(label).append("-----\n");
        for (int i = 0; i < b64.length(); i += LINE) {
            out.append(b64, i, Math.min(b64.length(), i + LINE)).append('\n');
        }
        out.append("-----END ").append(label).append("-----\n");
        return out.toString();
    }

    /**
     * Returns the DER contents of every block labelled {@code label} in {@code text}, in order. Text
     * outside blocks is ignored (RFC 7468 section 2 allows explanatory text); whitespace inside a block
     * is ignored (the lax parser of RFC 7468 section 3).
     *
     * @throws IllegalArgumentException for a block without its END line or with invalid base64
     */
    public static List<byte[]> decodeAll(String text, String label) {
        Objects.requireNonNull(text, "text");
        Objects.requireNonNull(label, "label");
        String begin = "-----BEGIN " + label + "-----";
        String end = "-----END " + label + "-----";
        List<byte[]> blocks = new ArrayList<>();
        int from = 0;
        while (true) {
            int b = text.indexOf(begin, from);
            if (b < 0) {
                return blocks;
            }
            int bodyStart = b + begin.length();
            int e = text.indexOf(end, bodyStart);
            if (e < 0) {
                throw new IllegalArgumentException("PEM: '" + begin + "' without '" + end + "'");
            }
            String body = text.substring(bodyStart, e).replaceAll("\\s+", "");
            try {
                blocks.add(Base64.getDecoder().decode(body.getBytes(StandardCharsets.US_ASCII)));
            } catch (IllegalArgumentException ex) {
                throw new IllegalArgumentException("PEM: invalid base64 in a " + label + " block", ex);
            }
            from = e + end.length();
        }
    }

    /**
     * Returns the DER contents of the single block labelled {@code label}.
     *
     * @throws IllegalArgumentException when there is no such block or more than one
     */
    public static byte[] decodeOne(String text, String label) {
        List<byte[]> all = decodeAll(text, label);
        if (all.size() != 1) {
            throw new IllegalArgumentException(
                    "PEM: " + all.size() + " " + label + " blocks (expected: exactly 1)");
        }
        return all.get(0);
    }
}
