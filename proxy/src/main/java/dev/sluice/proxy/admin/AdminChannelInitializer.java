package dev.sluice.proxy.admin;

import dev.sluice.proxy.approval.Approvals;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.proxy.core.PolicyHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.timeout.ReadTimeoutHandler;
import java.util.function.Supplier;

/**
 * Pipeline of a connection on the admin listener: HTTP/1.1 codec, requests aggregated up to
 * {@value #MAX_REQUEST_BYTES} bytes, a 30 s read timeout, then {@link AdminHandler}.
 */
public final class AdminChannelInitializer extends ChannelInitializer<Channel> {

    /** Largest admin request accepted, in bytes (admin requests have no body). */
    static final int MAX_REQUEST_BYTES = 8192;

    private final SluiceMetrics metrics;
    private final PolicyHolder policies;
    private final Supplier<String> notReadyReason;
    private final Approvals approvals;
    private final AdminToken token;

    /**
     * @param notReadyReason returns null when ready, or a one-line reason why not
     * @param approvals the requests held for {@code approvals.backend: admin}, or null
     * @param token what {@code /approvals} requires, or null (then those endpoints are 404)
     */
    public AdminChannelInitializer(SluiceMetrics metrics, PolicyHolder policies, Supplier<String> notReadyReason,
                                   Approvals approvals, AdminToken token) {
        this.metrics = metrics;
        this.policies = policies;
        this.notReadyReason = notReadyReason;
        this.approvals = approvals;
        this.token = token;
    }

    @Override
    protected void initChannel(Channel ch) {
        ch.pipeline()
                .addLast(new ReadTimeoutHandler(30))
                .addLast(new HttpServerCodec(4096, MAX_REQUEST_BYTES, MAX_REQUEST_BYTES))
                .addLast(new HttpObjectAggregator(MAX_REQUEST_BYTES))
                .addLast(new AdminHandler(metrics, policies, notReadyReason, approvals, token));
    }
}
