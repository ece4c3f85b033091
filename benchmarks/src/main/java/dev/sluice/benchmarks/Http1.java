package dev.sluice.benchmarks;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * The few HTTP/1.1 client steps the load clients need, on blocking sockets: open a CONNECT tunnel,
 * start TLS inside it, read a response head and a body framed by Content-Length, by chunked transfer
 * coding or by close. Not a general HTTP client: enough for the loopback origins and the proxies in
 * front of them.
 */
final class Http1 {

    private Http1() {
    }

    /** A response head: the status code and the framing-relevant fields. */
    record Head(int status, long contentLength, boolean chunked, boolean close, String raw) {
    }

    /**
     * Connects to {@code 127.0.0.1:proxyPort} and opens a CONNECT tunnel to {@code host:port}, or, when
     * {@code proxyPort} is 0, connects to {@code 127.0.0.1:port} directly.
     *
     * @throws IOException when the proxy refuses (the status line is in the message)
     */
    static Socket open(int proxyPort, String host, int port, int timeoutMillis) throws IOException {
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(timeoutMillis);
            socket.connect(new InetSocketAddress("127.0.0.1", proxyPort > 0 ? proxyPort : port), timeoutMillis);
            if (proxyPort > 0) {
                String authority = host + ":" + port;
                OutputStream out = socket.getOutputStream();
                out.write(("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                Head head = readHead(socket.getInputStream());
                if (head.status() != 200) {
                    throw new IOException("CONNECT " + authority + " refused: " + head.raw().lines().findFirst().orElse(""));
                }
            }
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** Starts TLS over {@code socket} (the tunnel), with SNI {@code host} when it is a name, and handshakes. */
    static SSLSocket tls(SSLSocketFactory factory, Socket socket, String host, int port) throws IOException {
        SSLSocket ssl = (SSLSocket) factory.createSocket(socket, host, port, true);
        ssl.startHandshake();
        return ssl;
    }

    /**
     * Reads a response head byte by byte up to the blank line (a 1xx interim answer is skipped).
     *
     * @throws EOFException when the peer closes first
     */
    static Head readHead(InputStream in) throws IOException {
        while (true) {
            StringBuilder raw = new StringBuilder(256);
            int last4 = 0;
            while (last4 != 0x0d0a0d0a) {
                int b = in.read();
                if (b < 0) {
                    throw new EOFException("closed before the end of a response head: " + raw);
                }
                raw.append((char) b);
                last4 = (last4 << 8) | b;
                if (raw.length() > 65536) {
                    throw new IOException("response head over 64 KiB");
                }
            }
            String text = raw.toString();
            String[] lines = text.split("\r\n");
            String[] statusLine = lines[0].split(" ", 3);
            if (statusLine.length < 2 || !statusLine[0].startsWith("HTTP/1.")) {
                throw new IOException("not an HTTP/1.x status line: " + lines[0]);
            }
            int status = Integer.parseInt(statusLine[1]);
            if (status >= 100 && status < 200) {
                continue;
            }
            long length = -1;
            boolean chunked = false;
            boolean close = statusLine[0].equals("HTTP/1.0");
            for (int i = 1; i < lines.length; i++) {
                int colon = lines[i].indexOf(':');
                if (colon <= 0) {
                    continue;
                }
                String name = lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = lines[i].substring(colon + 1).trim().toLowerCase(Locale.ROOT);
                switch (name) {
                    case "content-length" -> length = Long.parseLong(value);
                    case "transfer-encoding" -> chunked = value.endsWith("chunked");
                    case "connection", "proxy-connection" -> close = value.contains("close") || (close && !value.contains("keep-alive"));
                    default -> {
                    }
                }
            }
            return new Head(status, length, chunked, close, text);
        }
    }

    /**
     * Reads the body that {@code head} frames and returns its length in bytes; {@code sink} (may be
     * null) receives the body bytes (dechunked).
     */
    static long readBody(InputStream in, Head head, byte[] buf, StringBuilder sink) throws IOException {
        if (head.chunked()) {
            long total = 0;
            while (true) {
                String sizeLine = readLine(in);
                int semi = sizeLine.indexOf(';');
                int size = Integer.parseInt((semi >= 0 ? sizeLine.substring(0, semi) : sizeLine).trim(), 16);
                if (size == 0) {
                    while (!readLine(in).isEmpty()) {
                        // trailer fields
                    }
                    return total;
                }
                readFully(in, size, buf, sink);
                total += size;
                if (!readLine(in).isEmpty()) {
                    throw new IOException("chunk not followed by CRLF");
                }
            }
        }
        if (head.contentLength() >= 0) {
            readFully(in, head.contentLength(), buf, sink);
            return head.contentLength();
        }
        long total = 0;
        for (int n; (n = in.read(buf)) > 0; ) {
            if (sink != null) {
                sink.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
            }
            total += n;
        }
        return total;
    }

    private static void readFully(InputStream in, long length, byte[] buf, StringBuilder sink) throws IOException {
        long left = length;
        while (left > 0) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
                throw new EOFException("closed with " + left + " body bytes to go");
            }
            if (sink != null) {
                sink.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
            }
            left -= n;
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder(16);
        for (int b; (b = in.read()) != '\n'; ) {
            if (b < 0) {
                throw new EOFException("closed inside chunked framing");
            }
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }
}
