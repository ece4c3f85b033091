package dev.sluice.proxy.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A raw TCP client for requests no polite client sends (Content-Length with Transfer-Encoding,
 * Expect without a body, oversized header blocks, HTTP/1.0): writes the given bytes and reads one
 * response head and its Content-Length body. Each instance is one connection.
 */
public final class RawHttp implements AutoCloseable {

    /** A response as read off the wire. */
    public record Response(int status, Map<String, String> headers, String body) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    private final Socket socket;
    private final InputStream in;

    public RawHttp(InetSocketAddress address, int readTimeoutMillis) {
        try {
            socket = new Socket();
            socket.connect(address, 5_000);
            socket.setSoTimeout(readTimeoutMillis);
            in = socket.getInputStream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Writes {@code text} (ISO-8859-1) as is. */
    public RawHttp send(String text) throws IOException {
        socket.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
        socket.getOutputStream().flush();
        return this;
    }

    /** Reads one response: the head, then a Content-Length body if there is one. */
    public Response read() throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int last4 = 0;
        while (last4 != 0x0d0a0d0a) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("connection closed before a response head");
            }
            head.write(b);
            last4 = (last4 << 8) | b;
        }
        String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
        }
        String body = "";
        String length = headers.get("content-length");
        if (length != null) {
            body = new String(in.readNBytes(Integer.parseInt(length)), StandardCharsets.UTF_8);
        }
        return new Response(status, headers, body);
    }

    /** Answers whether the peer closed the connection (reads EOF within the read timeout). */
    public boolean closedByPeer() throws IOException {
        try {
            return in.read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    /** The connection's input, for a test that reads the raw bytes itself. */
    public InputStream input() {
        return in;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
