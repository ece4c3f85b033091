package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManager;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real TLS handshakes between two in-memory JDK SSLEngines, the client side using the pinning trust
 * manager the way Netty's SslHandler would (engine created with the peer host and port).
 */
class PinningTrustManagerTest {

    static final String HOST = "api.example.com";

    static TestPki pki;
    static TestPki otherPki;
    static UpstreamTrust trust;

    @TempDir
    Path dir;

    final List<PinCheck> seen = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void pkis() throws Exception {
        pki = new TestPki("Test");
        otherPki = new TestPki("Other");
        trust = UpstreamTrust.systemPlus(List.of(pki.root, otherPki.root));
    }

    @Test
    void handshakeWithMatchingPinStoresOkInTheSession() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.explicit(List.of(SpkiPin.of(pki.root)), PinMode.ENFORCE));
        SSLEngine client = client(tm, HOST);
        handshake(client, server(pki.leaf(HOST)));

        PinCheck check = PinningTrustManager.checkOf(client.getSession()).orElseThrow();
        assertThat(check.host()).isEqualTo(HOST);
        assertThat(check.result()).isEqualTo(PinResult.OK);
        assertThat(seen).containsExactly(check);
    }

    @Test
    void handshakeWithWrongPinFailsWithAFindablePinMismatch() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.explicit(List.of(SpkiPin.of(otherPki.root)), PinMode.ENFORCE));
        SSLEngine client = client(tm, HOST);

        assertThatThrownBy(() -> handshake(client, server(pki.leaf(HOST))))
                .isInstanceOf(SSLHandshakeException.class)
                .satisfies(e -> assertThat(PinMismatchException.find(e)).hasValueSatisfying(
                        m -> assertThat(m.host()).isEqualTo(HOST)));
        assertThat(seen).singleElement().satisfies(c -> {
            assertThat(c.result()).isEqualTo(PinResult.MISMATCH);
            assertThat(c.rejects()).isTrue();
        });
    }

    @Test
    void reportModeCompletesTheHandshakeAndRecordsTheMismatch() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.explicit(List.of(SpkiPin.of(otherPki.root)), PinMode.REPORT));
        SSLEngine client = client(tm, HOST);
        handshake(client, server(pki.leaf(HOST)));
        assertThat(PinningTrustManager.checkOf(client.getSession()))
                .hasValueSatisfying(c -> assertThat(c.result()).isEqualTo(PinResult.MISMATCH));
    }

    @Test
    void tofuOverRealHandshakes() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.tofu(PinMode.ENFORCE));
        SSLEngine first = client(tm, HOST);
        handshake(first, server(pki.leaf(HOST)));
        assertThat(PinningTrustManager.checkOf(first.getSession()).orElseThrow().result())
                .isEqualTo(PinResult.RECORDED);

        SSLEngine second = client(tm, HOST);
        handshake(second, server(pki.leaf(HOST)));
        assertThat(PinningTrustManager.checkOf(second.getSession()).orElseThrow().result()).isEqualTo(PinResult.OK);

        assertThatThrownBy(() -> handshake(client(tm, HOST), server(otherPki.leaf(HOST))))
                .satisfies(e -> assertThat(PinMismatchException.find(e)).isPresent());
    }

    @Test
    void hostnameMismatchFailsTheHandshakeAsATlsFailureNotAPinMismatch() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.none());
        assertThatThrownBy(() -> handshake(client(tm, HOST), server(pki.leaf("evil.example.com"))))
                .isInstanceOf(SSLHandshakeException.class)
                .hasStackTraceContaining("hostname mismatch")
                .satisfies(e -> assertThat(PinMismatchException.find(e)).isEmpty());
    }

    @Test
    void engineWithoutPeerHostFails() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.none());
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {tm}, null);
        SSLEngine client = ctx.createSSLEngine();
        client.setUseClientMode(true);
        assertThatThrownBy(() -> handshake(client, server(pki.leaf(HOST))))
                .hasStackTraceContaining("peer host unknown");
    }

    @Test
    void clientSideAndHostlessChecksAlwaysThrow() throws Exception {
        PinningTrustManager tm = manager(PinPolicy.none());
        X509Certificate[] chain = pki.leaf(HOST).chain;
        assertThatThrownBy(() -> tm.checkServerTrusted(chain, "UNKNOWN")).hasMessageContaining("peer host unknown");
        assertThatThrownBy(() -> tm.checkClientTrusted(chain, "UNKNOWN")).hasMessageContaining("client certificates");
        assertThat(tm.getAcceptedIssuers()).isEmpty();
    }

    private PinningTrustManager manager(PinPolicy policy) throws Exception {
        PinVerifier verifier = new PinVerifier(trust, h -> h.equals(HOST) ? policy : PinPolicy.none(),
                PinStore.open(dir));
        return new PinningTrustManager(verifier, seen::add);
    }

    private static SSLEngine client(PinningTrustManager tm, String host) throws Exception {
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, new TrustManager[] {tm}, null);
        SSLEngine engine = ctx.createSSLEngine(host, 443);
        engine.setUseClientMode(true);
        return engine;
    }

    private static SSLEngine server(TestPki.Leaf leaf) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        char[] password = "test".toCharArray();
        PrivateKey key = leaf.keys.getPrivate();
        ks.setKeyEntry("server", key, password, leaf.chain);
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, password);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        SSLEngine engine = ctx.createSSLEngine();
        engine.setUseClientMode(false);
        return engine;
    }

    /** Pumps records between the engines until both finish the handshake; rethrows a failure. */
    static void handshake(SSLEngine client, SSLEngine server) throws SSLException {
        ByteBuffer toServer = ByteBuffer.allocate(1 << 17);
        ByteBuffer toClient = ByteBuffer.allocate(1 << 17);
        ByteBuffer clientApp = ByteBuffer.allocate(1 << 17);
        ByteBuffer serverApp = ByteBuffer.allocate(1 << 17);
        ByteBuffer empty = ByteBuffer.allocate(0);
        client.beginHandshake();
        server.beginHandshake();
        for (int i = 0; i < 200; i++) {
            if (done(client) && done(server)) {
                return;
            }
            client.wrap(empty, toServer);
            runTasks(client);
            server.wrap(empty, toClient);
            runTasks(server);
            toServer.flip();
            server.unwrap(toServer, serverApp);
            toServer.compact();
            runTasks(server);
            toClient.flip();
            client.unwrap(toClient, clientApp);
            toClient.compact();
            runTasks(client);
        }
        throw new AssertionError("handshake did not finish");
    }

    private static boolean done(SSLEngine e) {
        HandshakeStatus s = e.getHandshakeStatus();
        return s == HandshakeStatus.NOT_HANDSHAKING || s == HandshakeStatus.FINISHED;
    }

    private static void runTasks(SSLEngine e) {
        Runnable task;
        while ((task = e.getDelegatedTask()) != null) {
            task.run();
        }
    }
}
