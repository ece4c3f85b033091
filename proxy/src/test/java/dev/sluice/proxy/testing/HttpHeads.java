package dev.sluice.proxy.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/** Reads one HTTP/1.1 message head (RFC 9112 section 2.1: up to and including the empty line) byte by byte. */
public final class HttpHeads {

    private HttpHeads() {
    }

    /**
     * Returns the head, CRLF CRLF included, in ISO-8859-1; throws when the stream ends first, naming what
     * was read.
     */
    public static String read(InputStream in) throws IOException {
        return readOrNull(in, true);
    }

    /** Returns the head, CRLF CRLF included, in ISO-8859-1, or null when the stream ends before it does. */
    public static String readOrNull(InputStream in) throws IOException {
        return readOrNull(in, false);
    }

    private static String readOrNull(InputStream in, boolean fail) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int last4 = 0;
        while (last4 != 0x0d0a0d0a) {
            int b = in.read();
            if (b < 0) {
                if (fail) {
                    throw new IOException("closed before the head ended: " + head.toString(StandardCharsets.ISO_8859_1));
                }
                return null;
            }
            head.write(b);
            last4 = (last4 << 8) | b;
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }
}
