package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.testing.EmbeddedContext;
import dev.sluice.proxy.testing.ManualClock;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import dev.sluice.rules.target.HttpTarget;
import dev.sluice.rules.target.Target;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

/**
 * {@link LlmPhase} on an {@link EmbeddedChannel}, with a policy parsed by the policy loader and a
 * {@link ManualClock} for the token window: a request of an extension whose tokens are spent is refused
 * 429 {@code token_budget}, any other goes on with a response scan that reads the model and usage of
 * the response as it streams (gzip undone) and charges them to the record, the metric and the
 * extension's token account.
 */
class LlmPhaseAnswersTest {

    private static final String HOST = "api.llm.test";
    private static final String OPENAI = "{\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-mini\",\"choices\":[],"
            + "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7,\"total_tokens\":19}}";

    private final ManualClock clock = new ManualClock(Instant.parse("2026-12-01T10:00:00Z"));
    private final ProxyContext context = EmbeddedContext.create("version: 1\n", clock);
    private final List<AuditRecord> records = new ArrayList<>();
    private final Policy policy = parse("""
            version: 1
            inspect:
              api.llm.test: {}
            limits:
              token_budget: { tokens: 30, window: 1h }
            """);

    private static Policy parse(String yaml) {
        try {
            return PolicyLoader.parse(yaml, "llm.yaml");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private ForwardRequest request(String extension) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions");
        r.headers().set("Host", HOST).set("Content-Length", "0");
        AuditEvent audit = new AuditEvent(records::add, clock).extension(extension);
        return new ForwardRequest(r, new HttpTarget("https", new Target(HOST, 443, null), r.uri()), null, policy,
                audit, true, null);
    }

    /** Sends {@code request} through the phase and answers what came out; a ForwardRequest has a scan. */
    private static Object through(EmbeddedChannel ch, ForwardRequest request) {
        ch.writeInbound(request);
        Object out = ch.readInbound();
        assertThat((Object) ch.readInbound()).isNull();
        return out;
    }

    /** Streams {@code body} through {@code scan} in chunks of {@code chunk} bytes, the last one marked. */
    private static void respond(ForwardRequest forwarded, String contentType, String contentEncoding, byte[] body,
                                int chunk, boolean complete) {
        ForwardRequest.ResponseScan scan = forwarded.responseScan();
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set("Content-Type", contentType);
        if (contentEncoding != null) {
            head.headers().set("Content-Encoding", contentEncoding);
        }
        scan.onHead(head);
        for (int at = 0; at < body.length; at += chunk) {
            int n = Math.min(chunk, body.length - at);
            boolean last = at + n == body.length;
            if (last && !complete) {
                break;
            }
            ByteBuf buf = Unpooled.wrappedBuffer(body, at, n);
            scan.onContent(buf, last, forwarded.audit());
            assertThat(buf.readerIndex()).as("a scan reads without consuming").isZero();
            buf.release();
        }
    }

    private AuditRecord emitted(AuditEvent audit) {
        records.clear();
        audit.emit();
        return records.get(0);
    }

    @Test
    void theUsageOfAResponseGoesToTheRecordTheMetricAndTheTokenAccount() {
        EmbeddedChannel ch = new EmbeddedChannel(new LlmPhase(context));
        ForwardRequest forwarded = (ForwardRequest) through(ch, request("agent"));
        respond(forwarded, "application/json", null, OPENAI.getBytes(StandardCharsets.UTF_8), 9, true);
        AuditRecord record = emitted(forwarded.audit());
        assertThat(record.llmModel()).isEqualTo("gpt-4o-mini");
        assertThat(record.llmInputTokens()).isEqualTo(12L);
        assertThat(record.llmOutputTokens()).isEqualTo(7L);
        assertThat(context.metrics().scrape())
                .contains("sluice_llm_tokens_total{extension=\"agent\",host=\"api.llm.test\",kind=\"input\"} 12.0")
                .contains("sluice_llm_tokens_total{extension=\"agent\",host=\"api.llm.test\",kind=\"output\"} 7.0");
        assertThat(context.budgets().tokenAccount("agent", Duration.ofHours(1)).used(Duration.ofHours(1)))
                .isEqualTo(19);
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aGzipEventStreamIsDecodedBeforeItsUsageIsRead() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new LlmPhase(context));
        ForwardRequest forwarded = (ForwardRequest) through(ch, request("agent"));
        String sse = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4\","
                + "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
                + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n";
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(gz)) {
            z.write(sse.getBytes(StandardCharsets.UTF_8));
        }
        respond(forwarded, "text/event-stream", "gzip", gz.toByteArray(), 7, true);
        AuditRecord record = emitted(forwarded.audit());
        assertThat(record.llmModel()).isEqualTo("claude-sonnet-4");
        assertThat(record.llmInputTokens()).isEqualTo(25L);
        assertThat(record.llmOutputTokens()).isEqualTo(9L);
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aResponseCutShortIsNotCounted() {
        EmbeddedChannel ch = new EmbeddedChannel(new LlmPhase(context));
        ForwardRequest forwarded = (ForwardRequest) through(ch, request("agent"));
        respond(forwarded, "application/json", null, OPENAI.getBytes(StandardCharsets.UTF_8), 9, false);
        AuditRecord record = emitted(forwarded.audit());
        assertThat(record.llmInputTokens()).isNull();
        assertThat(context.budgets().tokenAccount("agent", Duration.ofHours(1)).used(Duration.ofHours(1))).isZero();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void onceTheTokensAreSpentTheNextRequestIsRefused429UntilTheWindowMovesOn() {
        EmbeddedChannel ch = new EmbeddedChannel(new LlmPhase(context));
        ForwardRequest first = (ForwardRequest) through(ch, request("agent"));
        respond(first, "application/json", null, OPENAI.getBytes(StandardCharsets.UTF_8), 64, true);
        ForwardRequest second = (ForwardRequest) through(ch, request("agent"));
        assertThat(second.responseScan()).as("19 of 30 used: still allowed").isNotNull();
        respond(second, "application/json", null, OPENAI.getBytes(StandardCharsets.UTF_8), 64, true);

        ForwardRequest third = request("agent");
        Object refused = through(ch, third);
        assertThat(refused).isInstanceOf(ExchangeControl.Refuse.class);
        ExchangeControl.Refuse refuse = (ExchangeControl.Refuse) refused;
        assertThat(refuse.request()).isSameAs(third);
        assertThat(refuse.decision().reason().label()).isEqualTo("token_budget");
        assertThat(refuse.decision().reason().httpStatus()).isEqualTo(429);
        assertThat(refuse.decision().ruleId()).isEqualTo("limits.token_budget");
        assertThat(refuse.detail()).isEqualTo("token budget spent: 30 tokens per PT1H");

        assertThat(through(ch, request("other"))).as("another extension has its own account")
                .isInstanceOf(ForwardRequest.class);
        clock.advance(Duration.ofMinutes(61));
        assertThat(through(ch, request("agent"))).as("a new window").isInstanceOf(ForwardRequest.class);
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void bodyContentPassesThroughUntouched() {
        EmbeddedChannel ch = new EmbeddedChannel(new LlmPhase(context));
        ByteBuf buf = Unpooled.copiedBuffer("{\"q\":1}", StandardCharsets.UTF_8);
        DefaultHttpContent content = new DefaultHttpContent(buf);
        ch.writeInbound(content);
        assertThat((Object) ch.readInbound()).isSameAs(content);
        assertThat(buf.refCnt()).isEqualTo(1);
        buf.release();
        assertThat(ch.finish()).isFalse();
    }
}
