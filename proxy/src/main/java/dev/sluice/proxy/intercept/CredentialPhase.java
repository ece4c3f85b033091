package dev.sluice.proxy.intercept;

import dev.sluice.proxy.credential.Credentials;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.credential.CredentialRewriter;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The credential phase, right before the forwarder (after redaction, so that the value it injects is
 * not redacted): asks {@link CredentialRewriter} about each request head. On an intercepted leg it swaps
 * the extension's placeholders for the real values where the credential's {@code inject} allows it
 * ({@code credentials} in the audit record, {@code sluice_credential_injections_total}); on every leg a
 * placeholder left anywhere in the head is refused with 403 {@code credential_host_mismatch} (and 503
 * {@code credential_unavailable} when its value cannot be read), with one audit record, and nothing of
 * the request is forwarded (its body is dropped). Bodies are passed on as they are.
 */
public final class CredentialPhase extends ChannelInboundHandlerAdapter {

    /** Pipeline name of this phase. */
    public static final String NAME = "credentials";

    private final Credentials credentials;
    private final boolean intercepted;
    private boolean dropping;

    /**
     * @param credentials the running credential state
     * @param intercepted whether the requests of this pipeline go on an intercepted, certificate-verified leg
     */
    public CredentialPhase(Credentials credentials, boolean intercepted) {
        this.credentials = credentials;
        this.intercepted = intercepted;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ForwardRequest request) {
            dropping = false;
            onRequest(ctx, request);
        } else if (msg instanceof ExchangeControl.ClientClosedMidBody) {
            dropping = false;
            ctx.fireChannelRead(msg);
        } else if (msg instanceof HttpContent content && dropping) {
            content.release();
            if (content instanceof LastHttpContent) {
                dropping = false;
                ctx.fireChannelRead(LastHttpContent.EMPTY_LAST_CONTENT);
            }
        } else {
            ctx.fireChannelRead(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, ForwardRequest request) {
        Credentials.Snapshot snapshot = credentials.forPolicy(request.policy());
        HttpHeaders headers = request.request().headers();
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        headers.forEach(entries::add);
        String extension = request.audit().extensionOrNull();
        CredentialRewriter.Result r = CredentialRewriter.decide(snapshot.table(), extension, intercepted,
                request.target().target().host(), request.target().target().port(), request.request().uri(), entries,
                snapshot.vault()::value);
        switch (r.outcome()) {
            case PASS -> ctx.fireChannelRead(request);
            case REWRITTEN -> {
                headers.clear();
                r.headers().forEach(e -> headers.add(e.getKey(), e.getValue()));
                request.request().setUri(r.uri());
                r.injected().forEach(request.audit()::credentialInjected);
                ctx.fireChannelRead(request);
            }
            case MISMATCH, UNAVAILABLE -> {
                Reason reason = r.outcome() == CredentialRewriter.Outcome.MISMATCH
                        ? Reason.CREDENTIAL_HOST_MISMATCH : Reason.CREDENTIAL_UNAVAILABLE;
                dropping = !(request.request() instanceof io.netty.handler.codec.http.FullHttpRequest);
                ctx.fireChannelRead(new ExchangeControl.Refuse(request,
                        Decision.deny(reason, "credentials." + r.credential()), r.detail()));
            }
            default -> throw new IllegalStateException(r.outcome().toString());
        }
    }
}
