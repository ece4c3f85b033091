package dev.sluice.certs;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The client-side trust manager for upstream connections to inspected hosts: a {@link PinVerifier}
 * behind the JSSE interface. For Netty:
 * <pre>{@code
 * SslContext ctx = SslContextBuilder.forClient().trustManager(pinningTrustManager).build();
 * SslHandler h = ctx.newHandler(alloc, host, port, delegatedTaskExecutor); // host: canonical, unbracketed
 * // after the handshake:
 * Optional<PinCheck> c = PinningTrustManager.checkOf(h.engine().getSession());
 * // on failure: PinMismatchException.find(cause) → reason pin_mismatch, else upstream_tls_failed
 * }</pre>
 *
 * <p>The peer host is taken from the engine ({@link SSLEngine#getPeerHost()}, set by
 * {@code newHandler(alloc, host, port)}) or from the socket's handshake session; a handshake without a
 * peer host fails, as does the two-argument {@code checkServerTrusted} that carries none.
 *
 * <p>Each result is stored in the handshake session under {@link #SESSION_KEY} (read it with
 * {@link #checkOf(SSLSession)}) and given to the listener, which sees rejecting checks too, before
 * the {@link PinMismatchException} is thrown — the place to count {@code sluice_pin_failures_total} and
 * to log report-mode mismatches. The listener runs on the handshake thread and must not block.
 *
 * <p>Resumed sessions: a TLS session that is resumed skips {@code checkServerTrusted}, and the check
 * stored in it is the one of the handshake that created it, made under the policy and pin store of
 * that moment. Call {@link #resumeServerTrusted(X509Certificate[], SSLEngine)} for a resumed session
 * (Netty does, through its {@code ResumableX509ExtendedTrustManager}, before it signals the handshake
 * as complete): it runs the same check again, now, and replaces the stored one — or throws.
 *
 * <p>Client certificates are not validated here: the client-side methods always throw.
 */
public final class PinningTrustManager extends X509ExtendedTrustManager {

    /** The {@link SSLSession#getValue(String)} name under which the {@link PinCheck} is stored. */
    public static final String SESSION_KEY = "dev.sluice.certs.PinCheck";

    private static final X509Certificate[] NO_ISSUERS = new X509Certificate[0];

    private final PinVerifier verifier;
    private final Consumer<PinCheck> listener;

    /** Creates a trust manager without a listener. */
    public PinningTrustManager(PinVerifier verifier) {
        this(verifier, c -> { });
    }

    /** Creates a trust manager that reports every check to {@code listener}. */
    public PinningTrustManager(PinVerifier verifier, Consumer<PinCheck> listener) {
        this.verifier = Objects.requireNonNull(verifier, "verifier");
        this.listener = Objects.requireNonNull(listener, "listener");
    }

    /** Returns the pin check stored in {@code session} by a handshake through this trust manager. */
    public static Optional<PinCheck> checkOf(SSLSession session) {
        if (session == null) {
            return Optional.empty();
        }
        Object v = session.getValue(SESSION_KEY);
        return v instanceof PinCheck ? Optional.of((PinCheck) v) : Optional.empty();
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        Objects.requireNonNull(engine, "engine");
        run(chain, authType, engine.getPeerHost(), engine.getHandshakeSession());
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        SSLSession session = socket instanceof SSLSocket ? ((SSLSocket) socket).getHandshakeSession() : null;
        run(chain, authType, session == null ? null : session.getPeerHost(), session);
    }

    /**
     * Checks a resumed session as {@link #checkServerTrusted(X509Certificate[], String, SSLEngine)}
     * checks a full handshake: PKIX (at the current time), hostname and the host's pins as the policy
     * and the pin store say now, then stores the new check in {@code engine.getSession()} (replacing
     * the one the session was created with) and tells the listener.
     *
     * <p>Blocking, as a full check is (chain validation; TOFU hosts read a small file).
     *
     * @param chain the peer chain the session holds, leaf first
     * @param engine the engine whose handshake resumed a session; its peer host names the upstream host
     * @throws PinMismatchException on a mismatch in enforce mode
     * @throws CertificateException if validation or hostname verification fails, or the pin store fails
     */
    public void resumeServerTrusted(X509Certificate[] chain, SSLEngine engine) throws CertificateException {
        Objects.requireNonNull(engine, "engine");
        run(chain, null, engine.getPeerHost(), engine.getSession());
    }

    /** Always throws: without an engine or socket the peer host is unknown. */
    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("peer host unknown (expected: an SSLEngine created with a peer host)");
    }

    /** Always throws: this trust manager validates upstream servers only. */
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        checkClientTrusted(chain, authType);
    }

    /** Always throws: this trust manager validates upstream servers only. */
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        checkClientTrusted(chain, authType);
    }

    /** Always throws: this trust manager validates upstream servers only. */
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("client certificates are not accepted (upstream server validation only)");
    }

    /** Returns no issuers (only a server asks; this is a client's trust manager). */
    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return NO_ISSUERS;
    }

    private void run(X509Certificate[] chain, String authType, String host, SSLSession session)
            throws CertificateException {
        if (host == null || host.isEmpty()) {
            throw new CertificateException("peer host unknown (expected: an SSLEngine created with a peer host)");
        }
        PinCheck check = verifier.evaluate(host, chain, authType);
        if (session != null) {
            session.putValue(SESSION_KEY, check);
        }
        listener.accept(check);
        if (check.rejects()) {
            throw new PinMismatchException(check);
        }
    }
}
