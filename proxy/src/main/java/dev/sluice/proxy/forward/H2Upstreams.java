package dev.sluice.proxy.forward;

import dev.sluice.rules.policy.Policy;
import io.netty.util.concurrent.Future;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The upstream connections of one downstream HTTP/2 connection whose origin chose (or may choose)
 * {@code h2}, shared by that connection's stream forwarders so that their exchanges become streams of
 * one upstream connection instead of one connection each. It holds each upstream TLS connection from
 * the moment its handshake starts (the protocol is known only when it ends) and remembers an origin
 * that answered {@code http/1.1}, so that the streams of such an origin dial (or take an idle
 * connection from {@link UpstreamPool}) without waiting. Keyed by authority and by the policy
 * snapshot that dialled the connection, like the pool. All calls on the downstream connection's event
 * loop; {@link #close} closes every h2 connection, and any that completes its handshake later.
 */
public final class H2Upstreams {

    /**
     * Set on an HTTP/2 client's stream channel whose request said {@code te: trailers} (gRPC does, RFC
     * 9113 section 8.2.2): the request phase strips {@code TE} as hop-by-hop, and the forwarder sends
     * {@code te: trailers} again when the exchange goes out as a stream of an h2 upstream connection.
     */
    public static final io.netty.util.AttributeKey<Boolean> TE_TRAILERS =
            io.netty.util.AttributeKey.valueOf("sluice.h2.te-trailers");

    private record Entry(String authority, Policy policy, Future<UpstreamAlpn.Negotiated> negotiation) {
    }

    private final List<Entry> entries = new ArrayList<>();
    private boolean closed;

    /** Records a connection to {@code authority} under {@code policy} whose handshake is under way. */
    void negotiating(String authority, Policy policy, Future<UpstreamAlpn.Negotiated> negotiation) {
        for (Entry e : entries) {
            if (e.authority().equals(authority) && e.policy() == policy && e.negotiation().isSuccess()
                    && e.negotiation().getNow().h2() == null) {
                return; // a known http/1.1 origin: its connections go to the pool, not here
            }
        }
        entries.add(new Entry(authority, policy, negotiation));
        negotiation.addListener(f -> {
            if (closed && f.isSuccess() && ((UpstreamAlpn.Negotiated) f.getNow()).h2() != null) {
                ((UpstreamAlpn.Negotiated) f.getNow()).h2().channel().close();
            }
        });
    }

    /**
     * Returns, for {@code authority} under {@code policy}: an h2 connection that can take a stream now
     * (a completed negotiation), or a negotiation still under way (wait for it, then look at its
     * result); null when there is neither, or when the origin answered {@code http/1.1} before.
     */
    Future<UpstreamAlpn.Negotiated> find(String authority, Policy policy) {
        Future<UpstreamAlpn.Negotiated> pending = null;
        for (Iterator<Entry> it = entries.iterator(); it.hasNext(); ) {
            Entry e = it.next();
            if (!e.authority().equals(authority) || e.policy() != policy) {
                if (e.negotiation().isDone() && !usableOrHttp1(e.negotiation())) {
                    it.remove();
                }
                continue;
            }
            Future<UpstreamAlpn.Negotiated> n = e.negotiation();
            if (!n.isDone()) {
                pending = pending == null ? n : pending;
                continue;
            }
            if (!n.isSuccess()) {
                it.remove();
                continue;
            }
            H2Upstream h2 = n.getNow().h2();
            if (h2 == null) {
                return null; // an http/1.1 origin: the pool or a dial
            }
            if (h2.usable()) {
                return n;
            }
            if (!h2.channel().isActive()) {
                it.remove();
            }
        }
        return pending;
    }

    private static boolean usableOrHttp1(Future<UpstreamAlpn.Negotiated> n) {
        return n.isSuccess() && (n.getNow().h2() == null || n.getNow().h2().channel().isActive());
    }

    /** Closes every h2 connection; ones that finish their handshake later close then. */
    public void close() {
        closed = true;
        for (Entry e : entries) {
            if (e.negotiation().isDone() && e.negotiation().isSuccess() && e.negotiation().getNow().h2() != null) {
                e.negotiation().getNow().h2().channel().close();
            }
        }
        entries.clear();
    }
}
