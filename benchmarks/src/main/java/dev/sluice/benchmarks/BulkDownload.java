package dev.sluice.benchmarks;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * Downloads everything a bulk origin sends, directly or through a CONNECT tunnel, and prints MB/s.
 * Usage: {@code BulkDownload ORIGIN_PORT [PROXY_PORT] [--throttle]}; the origin is 127.0.0.1.
 * {@code --throttle} reads at about 25 MB/s, so that a transfer lasts long enough to be interrupted.
 */
public final class BulkDownload {

    private BulkDownload() {
    }

    /** Downloads from {@code 127.0.0.1:args[0]}, through the proxy on {@code args[1]} when given, and prints the rate. */
    public static void main(String[] args) throws Exception {
        int originPort = Integer.parseInt(args[0]);
        int proxyPort = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        boolean throttle = args.length > 2 && args[2].equals("--throttle");
        long start = System.nanoTime();
        long total = 0;
        try (Socket socket = new Socket("127.0.0.1", proxyPort > 0 ? proxyPort : originPort)) {
            socket.setReceiveBufferSize(1 << 20);
            InputStream in = socket.getInputStream();
            if (proxyPort > 0) {
                OutputStream out = socket.getOutputStream();
                out.write(("CONNECT 127.0.0.1:" + originPort + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                int last4 = 0;
                StringBuilder head = new StringBuilder();
                while (last4 != 0x0d0a0d0a) {
                    int b = in.read();
                    if (b < 0) {
                        throw new IllegalStateException("proxy closed: " + head);
                    }
                    head.append((char) b);
                    last4 = (last4 << 8) | b;
                }
                if (!head.toString().matches("(?s)HTTP/1\\.[01] 200.*")) {
                    throw new IllegalStateException("CONNECT refused: " + head);
                }
                start = System.nanoTime();
            }
            byte[] buf = new byte[1 << 20];
            for (int n; (n = in.read(buf)) > 0; ) {
                total += n;
                if (throttle) {
                    Thread.sleep(Math.max(1, n / 25_000));
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("%s bytes=%d seconds=%.3f MBps=%.1f%n", proxyPort > 0 ? "tunnel" : "direct", total, seconds,
                total / seconds / 1e6);
    }
}
