package dev.sluice.proxy.admin;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.core.PolicyHolder;
import dev.sluice.proxy.metrics.SluiceMetrics;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The admin handler's own answers, on an EmbeddedChannel: what an operator's curl would see. */
class AdminHandlerAnswersTest {

    private final AtomicReference<String> notReady = new AtomicReference<>("listeners not bound");
    private EmbeddedChannel channel;

    @BeforeEach
    void setUp() throws Exception {
        Policy policy = PolicyLoader.parse("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: registry.example.org
                """, "admin-test.yaml");
        channel = new EmbeddedChannel(new AdminHandler(new SluiceMetrics(),
                new PolicyHolder(policy, Clock.systemUTC()), notReady::get, null, null));
    }

    @AfterEach
    void tearDown() {
        channel.finishAndReleaseAll();
    }

    private FullHttpResponse ask(HttpMethod method, String uri) {
        channel.writeInbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method, uri));
        FullHttpResponse response = channel.readOutbound();
        assertThat(response).as("an answer to %s %s", method, uri).isNotNull();
        return response;
    }

    private static String body(FullHttpResponse response) {
        try {
            return response.content().toString(StandardCharsets.UTF_8);
        } finally {
            response.release();
        }
    }

    @Test
    void healthzIsOkWhileReadyzSaysWhyNotUntilReady() {
        FullHttpResponse health = ask(HttpMethod.GET, "/healthz");
        assertThat(health.status().code()).isEqualTo(200);
        assertThat(body(health)).isEqualTo("ok\n");

        FullHttpResponse notYet = ask(HttpMethod.GET, "/readyz");
        assertThat(notYet.status().code()).isEqualTo(503);
        assertThat(body(notYet)).isEqualTo("not ready: listeners not bound\n");

        notReady.set(null);
        FullHttpResponse ready = ask(HttpMethod.GET, "/readyz");
        assertThat(ready.status().code()).isEqualTo(200);
        assertThat(body(ready)).isEqualTo("ready\n");
    }

    @Test
    void otherMethodsAre405WithAllowAndOtherPathsOrProxyUse404() {
        FullHttpResponse post = ask(HttpMethod.POST, "/healthz");
        assertThat(post.status().code()).isEqualTo(405);
        assertThat(post.headers().get(HttpHeaderNames.ALLOW)).isEqualTo("GET, HEAD");
        post.release();

        FullHttpResponse unknown = ask(HttpMethod.GET, "/nothing-here");
        assertThat(unknown.status().code()).isEqualTo(404);
        unknown.release();

        // Someone using the admin port as a proxy: it forwards nothing.
        FullHttpResponse proxied = ask(HttpMethod.GET, "http://registry.example.org/healthz");
        assertThat(proxied.status().code()).isEqualTo(404);
        proxied.release();
    }

    @Test
    void approvalsAre404WithoutTheAdminBackendAndPolicyNamesItsSnapshot() {
        FullHttpResponse approvals = ask(HttpMethod.GET, "/approvals");
        assertThat(approvals.status().code()).isEqualTo(404);
        assertThat(body(approvals)).isEqualTo("not found: approvals.backend is not admin\n");

        FullHttpResponse policy = ask(HttpMethod.GET, "/policy");
        assertThat(policy.status().code()).isEqualTo(200);
        assertThat(policy.headers().get(HttpHeaderNames.CONTENT_TYPE)).isEqualTo("application/json");
        assertThat(body(policy)).contains("\"source\":\"admin-test.yaml\"").contains("\"extensions\":1");
    }

    @Test
    void headGetsTheHeadWithoutABody() {
        FullHttpResponse head = ask(HttpMethod.HEAD, "/healthz");
        assertThat(head.status().code()).isEqualTo(200);
        assertThat(head.content().readableBytes()).isZero();
        head.release();
    }
}
