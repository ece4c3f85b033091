package dev.sluice.benchmarks;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * HTTPS load through a CONNECT tunnel (or directly): small GETs to the {@code https} loopback origin.
 *
 * <p>Modes: {@code new} — every request is a new TCP connection, a CONNECT, a TLS handshake, one GET and
 * a close; {@code keepalive} — each worker opens one tunnel and one TLS session and sends GETs on it for
 * the whole run. Prints one JSON line on stdout: requests, errors, seconds, rps, p50_ms, p99_ms, max_ms.
 *
 * <p>Usage: {@code ConnectLoad --origin PORT --ca FILE [--proxy PORT] [--mode new|keepalive]
 * [--connections 64] [--seconds 10] [--warmup 2] [--host 127.0.0.1]}; {@code --proxy 0} or none is direct.
 * The JDK's TLS client caches sessions, so new connections may resume TLS 1.3 sessions: the same for every
 * system measured.
 */
public final class ConnectLoad {

    private ConnectLoad() {
    }

    /** Runs the load described in the class comment and prints its JSON line; see the class comment for {@code args}. */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = LoadRunner.options(args);
        int origin = Integer.parseInt(o.get("origin"));
        int proxy = Integer.parseInt(o.getOrDefault("proxy", "0"));
        boolean newConnections = o.getOrDefault("mode", "new").equals("new");
        String host = o.getOrDefault("host", "127.0.0.1");
        SSLSocketFactory factory = SelfSignedTls.clientContext(Path.of(o.get("ca"))).getSocketFactory();
        byte[] request = ("GET /small HTTP/1.1\r\nHost: " + host + ":" + origin + "\r\n"
                + (newConnections ? "Connection: close\r\n" : "") + "\r\n").getBytes(StandardCharsets.US_ASCII);
        LoadRunner.Result result = LoadRunner.run(() -> new LoadRunner.Worker() {
            private final byte[] buf = new byte[16384];
            private SSLSocket socket;
            private InputStream in;
            private OutputStream out;

            @Override
            public void once() throws Exception {
                if (socket == null) {
                    Socket tunnel = Http1.open(proxy, host, origin, 15_000);
                    socket = Http1.tls(factory, tunnel, host, origin);
                    in = new BufferedInputStream(socket.getInputStream(), 16384);
                    out = socket.getOutputStream();
                }
                out.write(request);
                out.flush();
                Http1.Head head = Http1.readHead(in);
                Http1.readBody(in, head, buf, null);
                if (head.status() != 200) {
                    throw new IOException("status " + head.status());
                }
                if (newConnections || head.close()) {
                    close();
                }
            }

            @Override
            public void close() {
                if (socket != null) {
                    try {
                        socket.close();
                    } catch (IOException ignored) {
                        // closing anyway
                    }
                    socket = null;
                }
            }
        }, Integer.parseInt(o.getOrDefault("connections", "64")), Double.parseDouble(o.getOrDefault("warmup", "2")),
                Double.parseDouble(o.getOrDefault("seconds", "10")));
        System.out.println(result.toJson());
    }
}
