package dev.sluice.proxy.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A raw TCP origin on loopback for answers no well-behaved server gives (stalls, malformed heads,
 * closes at chosen moments): an accept loop on an ephemeral port that hands each accepted socket to
 * {@code serve} on its own thread. {@link #close()} stops accepting and interrupts the serving threads;
 * each {@code serve} closes its own socket.
 */
public final class RawOrigin implements AutoCloseable {

    /** What the origin does with one accepted connection. */
    @FunctionalInterface
    public interface Serve {
        void serve(Socket socket) throws Exception;
    }

    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool();

    private RawOrigin(Serve serve) throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        threads.submit(() -> {
            while (!server.isClosed()) {
                Socket socket;
                try {
                    socket = server.accept();
                } catch (IOException e) {
                    return null;
                }
                threads.submit(() -> {
                    serve.serve(socket);
                    return null;
                });
            }
            return null;
        });
    }

    /** Starts an origin on 127.0.0.1 and an ephemeral port that serves each connection with {@code serve}. */
    public static RawOrigin start(Serve serve) throws IOException {
        return new RawOrigin(serve);
    }

    /** The origin's port. */
    public int port() {
        return server.getLocalPort();
    }

    @Override
    public void close() throws IOException {
        server.close();
        threads.shutdownNow();
    }
}
