package dev.sluice.benchmarks;

import java.net.InetSocketAddress;
import org.littleshoot.proxy.HttpProxyServer;
import org.littleshoot.proxy.impl.DefaultHttpProxyServer;

/**
 * Starts LittleProxy (2.8.0) with its default settings on {@code 127.0.0.1:PORT}, for the side-by-side
 * harness; runs until the process is killed. Usage: {@code LittleProxyLauncher PORT}.
 */
public final class LittleProxyLauncher {

    private LittleProxyLauncher() {
    }

    /** Starts LittleProxy on {@code 127.0.0.1:args[0]} and blocks until the process is killed. */
    public static void main(String[] args) throws InterruptedException {
        int port = Integer.parseInt(args[0]);
        HttpProxyServer server = DefaultHttpProxyServer.bootstrap()
                .withAddress(new InetSocketAddress("127.0.0.1", port))
                .start();
        System.err.println("littleproxy on " + server.getListenAddress());
        Thread.currentThread().join();
    }
}
