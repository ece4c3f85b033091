package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.rules.policy.Policy;
import dev.sluice.rules.policy.PolicyLoader;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link RedactionPhase} and {@link InspectedBody} on an {@link EmbeddedChannel}: what reaches the
 * forwarder (the next inbound handler) for each framing case, and that every buffer given to the phase
 * is released exactly once, whatever the outcome.
 */
class RedactionPhaseBufferTest {

    private final List<AuditRecord> records = new ArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();
    private final Random random = new Random(11);

    private static Policy policy(String extra) throws Exception {
        return PolicyLoader.parse("version: 1\nlimits:\n  max_buffered_body: 1KiB\n" + extra, "p.yaml");
    }

    private ForwardRequest request(Policy policy, String contentType, String... fields) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/upload");
        r.headers().set("Host", "api.llm.test");
        if (contentType != null) {
            r.headers().set("Content-Type", contentType);
        }
        for (int i = 0; i < fields.length; i += 2) {
            r.headers().set(fields[i], fields[i + 1]);
        }
        return new ForwardRequest(r, null, null, policy, new AuditEvent(records::add, Clock.systemUTC()), true, null);
    }

    private HttpContent content(byte[] bytes, boolean last) {
        ByteBuf buf = Unpooled.copiedBuffer(bytes);
        given.add(buf);
        return last ? new DefaultLastHttpContent(buf) : new DefaultHttpContent(buf);
    }

    private String key() {
        StringBuilder b = new StringBuilder("sk-ant-").append("api03-");
        String urlsafe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
        for (int i = 0; i < 93; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.append("AA").toString();
    }

    private static List<Object> drain(EmbeddedChannel ch) {
        List<Object> out = new ArrayList<>();
        for (Object m; (m = ch.readInbound()) != null; ) {
            out.add(m);
        }
        return out;
    }

    /** Bytes of the HttpContent messages in {@code out}, released. */
    private static String bodyOf(List<Object> out) {
        StringBuilder b = new StringBuilder();
        for (Object m : out) {
            if (m instanceof HttpContent c) {
                b.append(c.content().toString(StandardCharsets.ISO_8859_1));
                c.release();
            }
        }
        return b.toString();
    }

    private void assertAllGivenReleased() {
        assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("refCnt of a buffer given to the phase").isZero());
    }

    @Test
    void aBufferedChunkedBodyGoesOnWithAContentLengthAndEveryBufferIsReleased() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        ForwardRequest request = request(policy(""), "application/json", "Transfer-Encoding", "chunked");
        ch.writeInbound(request);
        assertThat(drain(ch)).as("the head waits for the body").isEmpty();
        ch.writeInbound(content("{\"a\":".getBytes(StandardCharsets.UTF_8), false));
        ch.writeInbound(content("\"b\"}".getBytes(StandardCharsets.UTF_8), true));
        List<Object> out = drain(ch);
        assertThat(out).hasSize(2);
        ForwardRequest head = (ForwardRequest) out.get(0);
        assertThat(head.request().headers().get("Content-Length")).isEqualTo("9");
        assertThat(head.request().headers().contains("Transfer-Encoding")).isFalse();
        assertThat(out.get(1)).isInstanceOf(LastHttpContent.class);
        assertThat(bodyOf(out)).isEqualTo("{\"a\":\"b\"}");
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void expectContinueIsAnsweredAndRemovedFromTheHead() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        ch.writeInbound(request(policy(""), "text/plain", "Content-Length", "2", "Expect", "100-continue"));
        HttpResponse interim = ch.readOutbound();
        assertThat(interim.status().code()).isEqualTo(100);
        ReferenceCountUtil.release(interim);
        ch.writeInbound(content("hi".getBytes(StandardCharsets.UTF_8), true));
        List<Object> out = drain(ch);
        assertThat(((ForwardRequest) out.get(0)).request().headers().contains("Expect")).isFalse();
        assertThat(bodyOf(out)).isEqualTo("hi");
        assertAllGivenReleased();
    }

    @Test
    void aBinaryBodyWithAKeyIsRefusedBeforeItsHeadLeavesAndItsBuffersAreReleased() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        ch.writeInbound(request(policy(""), "application/octet-stream", "Content-Length", "300"));
        byte[] body = ("xx " + key() + " yy\n" + "\0".repeat(150)).getBytes(StandardCharsets.US_ASCII);
        ch.writeInbound(content(body, false));
        List<Object> out = drain(ch);
        assertThat(out).hasSize(1);
        ExchangeControl.Refuse refuse = (ExchangeControl.Refuse) out.get(0);
        assertThat(refuse.decision().reason().label()).isEqualTo("credential_detected");
        ch.writeInbound(content(new byte[10], true));
        assertThat(drain(ch)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
    }

    @Test
    void aLargeBinaryBodyStreamsItsOwnBytesHoldingBackTheTailAndAbortsOnAKey() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        ch.writeInbound(request(policy(""), "application/octet-stream", "Transfer-Encoding", "chunked"));
        byte[] first = new byte[4000];
        random.nextBytes(first);
        ch.writeInbound(content(first, false));
        List<Object> out = drain(ch);
        assertThat(out.get(0)).isInstanceOf(ForwardRequest.class);
        assertThat(((ForwardRequest) out.get(0)).request().headers().get("Transfer-Encoding")).isEqualTo("chunked");
        String sent = bodyOf(out);
        assertThat(sent.length()).as("a tail is held back").isLessThan(first.length).isGreaterThan(3000);
        assertThat(sent).isEqualTo(new String(first, 0, sent.length(), StandardCharsets.ISO_8859_1));
        String key = key();
        ch.writeInbound(content(("k=" + key + "\n" + "\0".repeat(2000)).getBytes(StandardCharsets.US_ASCII), false));
        List<Object> after = drain(ch);
        assertThat(after.get(after.size() - 1)).isInstanceOf(ExchangeControl.Abort.class);
        assertThat(bodyOf(after)).as("no byte of the key left").doesNotContain(key.substring(0, 7));
        ch.writeInbound(content(new byte[5], true));
        assertThat(drain(ch)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
    }

    @Test
    void aClosedConnectionReleasesAHeldBodyAndWritesTheRecord() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        ch.writeInbound(request(policy(""), "text/plain", "Content-Length", "500"));
        ch.writeInbound(content(new byte[100], false));
        assertThat(drain(ch)).isEmpty();
        ch.close();
        assertAllGivenReleased();
        assertThat(records).singleElement().satisfies(r ->
                assertThat(r.toJson()).contains("downstream closed before the request body ended"));
    }

    /** A GET on the phase's channel with {@code fields} as headers and {@code target} as its request-target. */
    private ForwardRequest get(Policy policy, String target, String... fields) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, target);
        r.headers().set("Host", "api.llm.test");
        for (int i = 0; i < fields.length; i += 2) {
            r.headers().set(fields[i], fields[i + 1]);
        }
        return new ForwardRequest(r, null, null, policy, new AuditEvent(records::add, Clock.systemUTC()), true, null);
    }

    /** Passes {@code request} through the phase; returns the request that went on, its record emitted. */
    private static ForwardRequest passed(EmbeddedChannel ch, ForwardRequest request) {
        ch.writeInbound(request);
        List<Object> out = drain(ch);
        assertThat(out).hasSize(1);
        ForwardRequest went = (ForwardRequest) out.get(0);
        went.audit().emit();
        return went;
    }

    @Test
    void repeatedKeepAliveRequestsAreRedactedEveryTimeACredentialComesBack() throws Exception {
        // CleanValues: values a request showed clean are not scanned again on the connection; a value with
        // a credential is never taken for clean, in a header or in the request-target, however often it comes.
        EmbeddedChannel ch = new EmbeddedChannel(new RedactionPhase(true));
        Policy policy = policy("");
        String secret = key();
        String path = "/v1/" + key();
        for (int round = 0; round < 3; round++) {
            ForwardRequest clean = passed(ch, get(policy, "/v1/messages", "User-Agent", "agent/1.0", "X-Trace", "t-1"));
            assertThat(clean.request().headers().get("User-Agent")).isEqualTo("agent/1.0");
            assertThat(clean.request().uri()).isEqualTo("/v1/messages");
            assertThat(records.get(records.size() - 1).redactions()).as("round %d, clean", round).isNullOrEmpty();

            ForwardRequest leaky = passed(ch, get(policy, path, "User-Agent", "agent/1.0", "X-Trace", secret));
            assertThat(leaky.request().headers().get("User-Agent")).isEqualTo("agent/1.0");
            assertThat(leaky.request().headers().get("X-Trace")).as("round %d", round)
                    .doesNotContain(secret).contains("[REDACTED:");
            assertThat(leaky.request().uri()).as("round %d", round).doesNotContain(path.substring(4))
                    .contains("%5BREDACTED%3A");
            assertThat(records.get(records.size() - 1).redactions()).as("round %d, header and target", round)
                    .containsValue(2L);
        }
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void cleanValuesAreForgottenWhenTheDetectorSetChanges() {
        CleanValues clean = new CleanValues();
        dev.sluice.rules.redact.DetectorSet builtins = dev.sluice.rules.redact.DetectorSet.builtins();
        clean.use(builtins).addCleanHeaderValue("agent/1.0");
        clean.addCleanTarget("/v1/messages");
        assertThat(clean.use(builtins).cleanHeaderValue("agent/1.0")).isTrue();
        assertThat(clean.cleanTarget("/v1/messages")).isTrue();
        assertThat(clean.cleanTarget("agent/1.0")).as("a header value is not a target").isFalse();
        assertThat(clean.use(dev.sluice.rules.redact.DetectorSet.of(List.of())).cleanHeaderValue("agent/1.0")).isFalse();
        assertThat(clean.cleanTarget("/v1/messages")).isFalse();
    }
}
