package dev.sluice.benchmarks;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Opens {@code --count} CONNECT tunnels through a proxy to a loopback origin and holds them open and idle,
 * so that the harness can read the proxy's resident memory with that many tunnels up.
 *
 * <p>One thread, one selector, at most {@code --inflight} CONNECTs pending at once. When every tunnel is
 * up (or has failed, or {@code --open-timeout} seconds have passed) it prints one JSON line on stdout —
 * {@code {"opened":N,"failed":F,"seconds":S,"first_error":...}} — then holds the tunnels until its
 * standard input closes or {@code --hold} seconds pass, and closes them all.
 *
 * <p>Usage: {@code IdleTunnels --proxy PORT --origin PORT [--count 10000] [--inflight 256] [--hold 60]
 * [--open-timeout 60]}. Needs more than {@code count} file descriptors, and so does the proxy (twice).
 */
public final class IdleTunnels {

    private IdleTunnels() {
    }

    private static final class Pending {
        final ByteBuffer request;
        final ByteBuffer response = ByteBuffer.allocate(1024);

        Pending(ByteBuffer request) {
            this.request = request;
        }
    }

    /** Opens, reports and holds the tunnels; see the class comment for {@code args}. */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = LoadRunner.options(args);
        int proxy = Integer.parseInt(o.get("proxy"));
        int origin = Integer.parseInt(o.get("origin"));
        int count = Integer.parseInt(o.getOrDefault("count", "10000"));
        int inflightMax = Integer.parseInt(o.getOrDefault("inflight", "256"));
        double holdSeconds = Double.parseDouble(o.getOrDefault("hold", "60"));
        double openTimeout = Double.parseDouble(o.getOrDefault("open-timeout", "60"));
        byte[] connect = ("CONNECT 127.0.0.1:" + origin + " HTTP/1.1\r\nHost: 127.0.0.1:" + origin + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        InetSocketAddress proxyAddress = new InetSocketAddress("127.0.0.1", proxy);
        List<SocketChannel> open = new ArrayList<>(count);
        int started = 0;
        int inflight = 0;
        int failed = 0;
        String firstError = null;
        long start = System.nanoTime();
        long deadline = start + (long) (openTimeout * 1e9);
        try (Selector selector = Selector.open()) {
            while ((open.size() + failed < count) && System.nanoTime() < deadline) {
                while (started < count && inflight < inflightMax) {
                    SocketChannel channel = SocketChannel.open();
                    try {
                        channel.configureBlocking(false);
                        channel.setOption(StandardSocketOptions.SO_RCVBUF, 4096);
                        channel.setOption(StandardSocketOptions.SO_SNDBUF, 4096);
                        channel.connect(proxyAddress);
                        channel.register(selector, SelectionKey.OP_CONNECT, new Pending(ByteBuffer.wrap(connect)));
                    } catch (IOException e) {
                        channel.close();
                        failed++;
                        started++;
                        firstError = firstError == null ? e.toString() : firstError;
                        continue;
                    }
                    started++;
                    inflight++;
                }
                selector.select(100);
                for (SelectionKey key : selector.selectedKeys()) {
                    SocketChannel channel = (SocketChannel) key.channel();
                    Pending pending = (Pending) key.attachment();
                    try {
                        if (key.isConnectable()) {
                            channel.finishConnect();
                            channel.write(pending.request);
                            key.interestOps(pending.request.hasRemaining() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                        } else if (key.isWritable()) {
                            channel.write(pending.request);
                            if (!pending.request.hasRemaining()) {
                                key.interestOps(SelectionKey.OP_READ);
                            }
                        } else if (key.isReadable()) {
                            if (channel.read(pending.response) < 0) {
                                throw new IOException("proxy closed before answering CONNECT");
                            }
                            String text = new String(pending.response.array(), 0, pending.response.position(),
                                    StandardCharsets.ISO_8859_1);
                            if (text.contains("\r\n\r\n")) {
                                if (!text.startsWith("HTTP/1.1 200") && !text.startsWith("HTTP/1.0 200")) {
                                    throw new IOException("CONNECT refused: " + text.lines().findFirst().orElse(""));
                                }
                                key.cancel();
                                inflight--;
                                open.add(channel);
                            } else if (!pending.response.hasRemaining()) {
                                throw new IOException("CONNECT answer head over 1 KiB");
                            }
                        }
                    } catch (IOException e) {
                        key.cancel();
                        channel.close();
                        inflight--;
                        failed++;
                        firstError = firstError == null ? e.toString() : firstError;
                    }
                }
                selector.selectedKeys().clear();
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.println(String.format(Locale.ROOT, "{\"opened\":%d,\"failed\":%d,\"seconds\":%.3f,\"first_error\":%s}",
                open.size(), failed + (count - open.size() - failed), seconds,
                firstError == null ? "null" : "\"" + firstError.replace("\"", "'") + "\""));
        System.out.flush();
        Thread waiter = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for end of input
                }
            } catch (IOException ignored) {
                // treat as closed
            }
        });
        waiter.setDaemon(true);
        waiter.start();
        waiter.join((long) (holdSeconds * 1000));
        for (SocketChannel channel : open) {
            channel.close();
        }
    }
}
