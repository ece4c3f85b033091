package dev.sluice.proxy.tls;

import dev.sluice.certs.PinningTrustManager;
import io.netty.handler.ssl.ResumableX509ExtendedTrustManager;
import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Objects;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The upstream trust manager as Netty's {@link io.netty.handler.ssl.SslHandler} sees it: the
 * {@link PinningTrustManager}, plus the hook Netty calls (for both TLS providers) when a handshake
 * resumed a TLS session instead of validating the server's chain. A resumed session never brings its
 * old trust decision along: the hook runs the whole check again, now, under the running policy and
 * pin store, stores the new result in the session (so the audit's {@code pin} is this connection's),
 * and a failure fails the handshake ({@link io.netty.handler.ssl.ResumableX509ExtendedTrustManager}).
 * The request is not in the TLS engine yet at that point: {@link HoldUntilHandshake} keeps it until
 * the handshake, this check included, has succeeded.
 *
 * <p>Sluice turns upstream resumption off ({@link InterceptionTls}), so the hook is a backstop: it is
 * logged as a warning when it runs, and it runs on the event loop (Netty calls it there), which is
 * acceptable only because it should never run.
 */
final class ResumableTrust extends X509ExtendedTrustManager implements ResumableX509ExtendedTrustManager {

    private static final Logger log = LoggerFactory.getLogger(ResumableTrust.class);

    private final PinningTrustManager pins;

    ResumableTrust(PinningTrustManager pins) {
        this.pins = Objects.requireNonNull(pins, "pins");
    }

    @Override
    public void resumeServerTrusted(X509Certificate[] chain, SSLEngine engine) throws CertificateException {
        log.warn("upstream TLS session to {} was resumed (resumption is meant to be off); checking its chain again",
                engine.getPeerHost());
        pins.resumeServerTrusted(chain, engine);
    }

    /** Always throws: this trust manager validates upstream servers only. */
    @Override
    public void resumeClientTrusted(X509Certificate[] chain, SSLEngine engine) throws CertificateException {
        pins.checkClientTrusted(chain, null);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        pins.checkServerTrusted(chain, authType, engine);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        pins.checkServerTrusted(chain, authType, socket);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        pins.checkServerTrusted(chain, authType);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        pins.checkClientTrusted(chain, authType, engine);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        pins.checkClientTrusted(chain, authType, socket);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        pins.checkClientTrusted(chain, authType);
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return pins.getAcceptedIssuers();
    }
}
