package dev.sluice.benchmarks;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * The interception load: a 64 KiB JSON POST (an LLM API call carrying a few credential-shaped strings for
 * a redactor to find) through a CONNECT tunnel to the {@code sse} loopback origin, answered by a chunked
 * {@code text/event-stream}; the whole stream is read before the next request. Each worker keeps one tunnel
 * and one TLS session open (keep-alive), reopening it if the proxy closes it.
 *
 * <p>The client trusts exactly the PEM file {@code --ca}: the origin's certificate for a blind tunnel or
 * direct, the intercepting proxy's CA otherwise. Prints one JSON line like {@link ConnectLoad}, plus
 * {@code body_bytes} (sent) and {@code origin_received_bytes} (what the origin reported receiving in the
 * last exchange: fewer when a redactor shortened the body).
 *
 * <p>Usage: {@code SseLoad --origin PORT --ca FILE [--proxy PORT] [--connections 8] [--seconds 10]
 * [--warmup 2] [--host 127.0.0.1]}.
 */
public final class SseLoad {

    /** Size of the JSON request body in bytes. */
    public static final int BODY_BYTES = 64 * 1024;

    private SseLoad() {
    }

    /** Runs the load described in the class comment and prints its JSON line; see the class comment for {@code args}. */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = LoadRunner.options(args);
        int origin = Integer.parseInt(o.get("origin"));
        int proxy = Integer.parseInt(o.getOrDefault("proxy", "0"));
        String host = o.getOrDefault("host", "127.0.0.1");
        SSLSocketFactory factory = SelfSignedTls.clientContext(Path.of(o.get("ca"))).getSocketFactory();
        byte[] body = jsonBody();
        AtomicLong originReceived = new AtomicLong(-1);
        byte[] head = ("POST /v1/messages HTTP/1.1\r\nHost: " + host + ":" + origin + "\r\n"
                + "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
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
                out.write(head);
                out.write(body);
                out.flush();
                Http1.Head response = Http1.readHead(in);
                StringBuilder events = new StringBuilder(4096);
                Http1.readBody(in, response, buf, events);
                if (response.status() != 200) {
                    throw new IOException("status " + response.status());
                }
                int stop = events.indexOf("\"received\":");
                if (events.indexOf("message_stop") < 0 || stop < 0) {
                    throw new IOException("event stream without message_stop");
                }
                int from = stop + "\"received\":".length();
                int to = from;
                while (to < events.length() && Character.isDigit(events.charAt(to))) {
                    to++;
                }
                originReceived.set(Long.parseLong(events.substring(from, to)));
                if (response.close()) {
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
        }, Integer.parseInt(o.getOrDefault("connections", "8")), Double.parseDouble(o.getOrDefault("warmup", "2")),
                Double.parseDouble(o.getOrDefault("seconds", "10")));
        String json = result.toJson();
        // How many body bytes the origin saw in the last exchange: BODY_BYTES through a blind tunnel,
        // fewer when a redactor replaced the credential-shaped strings with shorter markers.
        System.out.println(json.substring(0, json.length() - 1) + ",\"origin_received_bytes\":" + originReceived.get()
                + ",\"body_bytes\":" + body.length + "}");
    }

    /**
     * A JSON request body of exactly {@link #BODY_BYTES} bytes: a messages-API call whose user content
     * is prose with, every 8 KiB or so, a credential-shaped string (AWS access key id, GitHub token,
     * Anthropic key) of the kind a redactor is meant to catch.
     */
    static byte[] jsonBody() {
        String prefix = "{\"model\":\"claude-bench\",\"max_tokens\":1024,\"stream\":true,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"";
        String suffix = "\"}]}";
        String[] secrets = {
            " aws_access_key_id=AKIAIOSFODNN7EXAMPLE ",
            " token ghp_0123456789abcdefghijABCDEFGHIJ012345 ",
            " key sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-abcdefghijklmnopqrstu ",
        };
        String prose = "The build failed on the integration step; here is the log and the config we used. ";
        StringBuilder content = new StringBuilder(BODY_BYTES);
        int target = BODY_BYTES - prefix.length() - suffix.length();
        int next = 0;
        while (content.length() < target) {
            if (content.length() / 8192 >= next && content.length() + 200 < target) {
                content.append(secrets[next % secrets.length]);
                next++;
            }
            content.append(prose);
        }
        content.setLength(target);
        return (prefix + content + suffix).getBytes(StandardCharsets.US_ASCII);
    }
}
