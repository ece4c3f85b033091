package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.core.ProxyContext;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.testing.EmbeddedContext;
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
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link RedFlagPhase} on an {@link EmbeddedChannel}, with policies parsed by the policy loader: a
 * {@code block} rule matching the request body is refused 403 {@code red_flag} before the head goes on
 * (or aborts the exchange when the head already went), a {@code log} rule lets the request pass as it
 * came and records the finding (audit record and metric), and a response rule stops the stream after
 * the chunk with the match. Every buffer given to the phase is released or passed on.
 */
class RedFlagPhaseAnswersTest {

    private static final String HOST = "api.llm.test";
    private static final String TEMPLATE = "hello {{config.__class__.__init__.__globals__}}";

    private final ProxyContext context = EmbeddedContext.create("version: 1\n");
    private final List<AuditRecord> records = new ArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();

    private static Policy policy(String redFlags) throws Exception {
        return PolicyLoader.parse("version: 1\ninspect:\n  " + HOST + ": {}\nred_flags:\n" + redFlags, "p.yaml");
    }

    private static final String BLOCK = """
              rules:
                - { id: template_injection, action: block, direction: request }
                - { id: credential_path, direction: request }
            """;

    private ForwardRequest request(Policy policy, String uri, String... fields) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, uri);
        r.headers().set("Host", HOST).set("Content-Type", "application/json");
        for (int i = 0; i < fields.length; i += 2) {
            r.headers().set(fields[i], fields[i + 1]);
        }
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).extension("agent");
        return new ForwardRequest(r, new HttpTarget("https", new Target(HOST, 443, null), uri), null, policy, audit,
                true, null);
    }

    private HttpContent content(String text, boolean last) {
        ByteBuf buf = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        given.add(buf);
        return last ? new DefaultLastHttpContent(buf) : new DefaultHttpContent(buf);
    }

    private static String chat(String text) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}";
    }

    private static List<Object> drain(EmbeddedChannel ch) {
        List<Object> out = new ArrayList<>();
        for (Object m; (m = ch.readInbound()) != null; ) {
            out.add(m);
        }
        return out;
    }

    private static String bodyOf(List<Object> out) {
        StringBuilder b = new StringBuilder();
        for (Object m : out) {
            if (m instanceof HttpContent c) {
                b.append(c.content().toString(StandardCharsets.UTF_8));
                c.release();
            }
        }
        return b.toString();
    }

    private void assertAllGivenReleased() {
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("refCnt of a buffer given to the phase").isZero());
    }

    private AuditRecord emitted(AuditEvent audit) {
        audit.emit();
        assertThat(records).hasSize(1);
        return records.get(0);
    }

    @Test
    void aBlockRuleInTheFirstChunkIsRefused403RedFlagBeforeTheHeadGoesOn() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        String body = chat(TEMPLATE);
        ForwardRequest request = request(policy(BLOCK), "/v1/messages", "Content-Length",
                String.valueOf(body.length() + 4));
        ch.writeInbound(request);
        assertThat(drain(ch)).as("the head waits for the body's first chunk").isEmpty();
        ch.writeInbound(content(body, false));
        List<Object> out = drain(ch);
        assertThat(out).hasSize(2);
        assertThat(out.get(0)).isInstanceOf(ExchangeControl.Refuse.class);
        ExchangeControl.Refuse refuse = (ExchangeControl.Refuse) out.get(0);
        assertThat(refuse.request()).isSameAs(request);
        assertThat(refuse.bodyAsSent()).as("nothing went upstream: the body follows for capture").isTrue();
        assertThat(bodyOf(out)).isEqualTo(body);
        assertThat(refuse.decision().reason().label()).isEqualTo("red_flag");
        assertThat(refuse.decision().reason().httpStatus()).isEqualTo(403);
        assertThat(refuse.decision().ruleId()).isEqualTo("red_flags.template_injection");
        assertThat(refuse.detail()).isEqualTo("red flag template_injection in the request body");
        ch.writeInbound(content("    ", true));
        List<Object> rest = drain(ch);
        assertThat(rest).as("the rest follows the refusal too; the forwarder drops it")
                .singleElement().isInstanceOf(LastHttpContent.class);
        assertThat(bodyOf(rest)).isEqualTo("    ");
        assertThat(emitted(request.audit()).redFlags()).containsEntry("template_injection", 1L);
        assertThat(context.metrics().scrape())
                .contains("sluice_red_flags_total{extension=\"agent\",rule=\"template_injection\"} 1.0");
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aLoggedRulePassesTheRequestUnchangedAndRecordsTheFinding() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        String body = chat("please cat ~/.ssh/id_rsa for me");
        ForwardRequest request = request(policy(BLOCK), "/v1/messages", "Transfer-Encoding", "chunked");
        ch.writeInbound(request);
        assertThat(drain(ch)).isEmpty();
        ch.writeInbound(content(body.substring(0, 30), false));
        ch.writeInbound(content(body.substring(30), true));
        List<Object> out = drain(ch);
        assertThat(out).hasSize(3);
        assertThat(out.get(0)).as("no response rule: the very request goes on").isSameAs(request);
        assertThat(out.get(2)).isInstanceOf(LastHttpContent.class);
        assertThat(bodyOf(out)).isEqualTo(body);
        assertThat(request.request().headers().get("Transfer-Encoding")).isEqualTo("chunked");
        AuditRecord record = emitted(request.audit());
        assertThat(record.redFlags()).containsExactly(java.util.Map.entry("credential_path", 1L));
        assertThat(record.reason()).isNull();
        assertThat(context.metrics().scrape())
                .contains("sluice_red_flags_total{extension=\"agent\",rule=\"credential_path\"} 1.0");
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aBlockRuleInALaterChunkAbortsTheExchangeAndDropsTheRest() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        ForwardRequest request = request(policy(BLOCK), "/v1/messages", "Transfer-Encoding", "chunked");
        ch.writeInbound(request);
        ch.writeInbound(content("{\"messages\":[{\"content\":\"fine\"},", false));
        List<Object> first = drain(ch);
        assertThat(first).hasSize(2);
        assertThat(first.get(0)).isSameAs(request);
        bodyOf(first);
        ch.writeInbound(content("{\"content\":\"" + TEMPLATE + "\"},", false));
        List<Object> out = drain(ch);
        assertThat(out).singleElement().isInstanceOf(ExchangeControl.Abort.class);
        ExchangeControl.Abort abort = (ExchangeControl.Abort) out.get(0);
        assertThat(abort.decision().reason().label()).isEqualTo("red_flag");
        assertThat(abort.decision().ruleId()).isEqualTo("red_flags.template_injection");
        ch.writeInbound(content("{\"content\":\"more\"}]}", true));
        assertThat(drain(ch)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aRequestThatExpects100ContinueIsNotHeldAndABlockMatchThenAborts() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        ForwardRequest request = request(policy(BLOCK), "/v1/messages", "Content-Length", "100",
                "Expect", "100-continue");
        ch.writeInbound(request);
        assertThat(drain(ch)).as("the origin must answer 100 before the body comes").singleElement()
                .isSameAs(request);
        ch.writeInbound(content(chat(TEMPLATE), false));
        assertThat(drain(ch)).singleElement().isInstanceOf(ExchangeControl.Abort.class);
        ch.writeInbound(content("", true));
        assertThat(drain(ch)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aBodyThatIsNotJsonIsNotReadAndPassesAtOnce() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        ForwardRequest request = request(policy(BLOCK), "/v1/upload", "Content-Type", "application/octet-stream",
                "Content-Length", "60");
        ch.writeInbound(request);
        assertThat(drain(ch)).singleElement().isSameAs(request);
        ch.writeInbound(content(TEMPLATE, true));
        List<Object> out = drain(ch);
        assertThat(bodyOf(out)).isEqualTo(TEMPLATE);
        assertThat(emitted(request.audit()).redFlags()).isNull();
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aSuppressedRuleDoesNotBlockOnItsPath() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        Policy policy = policy(BLOCK + "  suppress:\n    - { rule: template_injection, path_prefix: /v1/docs }\n");
        ForwardRequest request = request(policy, "/v1/docs/page", "Transfer-Encoding", "chunked");
        ch.writeInbound(request);
        ch.writeInbound(content(chat(TEMPLATE), true));
        List<Object> out = drain(ch);
        assertThat(out.get(0)).isSameAs(request);
        assertThat(bodyOf(out)).isEqualTo(chat(TEMPLATE));
        assertThat(emitted(request.audit()).redFlags()).isNull();
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aBlockRuleInAResponseStopsTheStreamAfterTheChunkWithTheMatch() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedFlagPhase(context));
        ForwardRequest request = request(policy("""
                  rules:
                    - { id: template_injection, action: block, direction: response }
                """), "/v1/messages");
        ch.writeInbound(request);
        ForwardRequest forwarded = ch.readInbound();
        assertThat(forwarded.request()).isSameAs(request.request());
        ForwardRequest.ResponseScan scan = forwarded.responseScan();
        assertThat(scan).as("a response rule reads the response").isNotNull();
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set("Content-Type", "text/event-stream");
        scan.onHead(head);
        ByteBuf clean = Unpooled.copiedBuffer("data: {\"delta\":{\"text\":\"hello {{config.\"}}\n\n",
                StandardCharsets.UTF_8);
        scan.onContent(clean, false, forwarded.audit());
        assertThat(scan.stopReason()).as("half of the match is no match yet").isNull();
        ByteBuf rest = Unpooled.copiedBuffer("data: {\"delta\":{\"text\":\"__class__.__init__.__globals__}}\"}}\n\n",
                StandardCharsets.UTF_8);
        scan.onContent(rest, false, forwarded.audit());
        assertThat(scan.stopReason()).isEqualTo("red_flag: template_injection in the response, stream closed");
        clean.release();
        rest.release();
        assertThat(emitted(forwarded.audit()).redFlags()).containsEntry("template_injection", 1L);
        assertThat(ch.finish()).isFalse();
    }
}
