package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.credential.Credentials;
import dev.sluice.proxy.exchange.ExchangeControl;
import dev.sluice.proxy.exchange.ForwardRequest;
import dev.sluice.rules.credential.Placeholders;
import dev.sluice.rules.decision.Decision;
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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link CredentialPhase} on an {@link EmbeddedChannel}, with a policy parsed by the policy loader and a
 * real {@link Credentials} (values from a map standing in for Sluice's environment): what it passes on
 * to the forwarder (the next inbound handler) for a placeholder it may swap, what it refuses (reason,
 * status, rule), how it scrubs a response written through it, and that every buffer it is given is
 * released.
 */
class CredentialPhaseAnswersTest {

    private static final String API = "api.llm.test";
    private static final String OTHER = "other.llm.test";
    private static final String REAL = "sk-real-0123456789abcdefghij";

    private final List<AuditRecord> records = new ArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();
    private final Placeholders placeholders = new Placeholders(key());
    private final Credentials credentials = new Credentials(placeholders, Clock.systemUTC(),
            Map.of("LLM_REAL", REAL)::get);
    private final Policy policy = prepared("""
            version: 1
            extensions:
              agent:
                allow:
                  - { host: api.llm.test, ports: [443] }
                  - { host: other.llm.test, ports: [443] }
                credentials: [llm, gone]
            inspect:
              api.llm.test: {}
              other.llm.test: {}
            limits:
              max_buffered_body: 1KiB
            credentials:
              llm:
                source: { env: LLM_REAL }
                inject: { hosts: [api.llm.test], ports: [443], header: authorization, body: true }
              gone:
                source: { env: GONE_REAL }
                optional: true
                inject: { hosts: [api.llm.test], ports: [443], header: x-gone }
            """);
    private final String ph = placeholders.placeholder("agent", "llm");

    private static byte[] key() {
        byte[] key = new byte[Placeholders.KEY_BYTES];
        Arrays.fill(key, (byte) 7);
        return key;
    }

    private Policy prepared(String yaml) {
        try {
            Policy p = PolicyLoader.parse(yaml, "credentials.yaml");
            credentials.prepare(p);
            return p;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @AfterEach
    void close() {
        credentials.close();
    }

    private ForwardRequest request(String host, HttpMethod method, String uri, String... fields) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, method, uri);
        r.headers().set("Host", host);
        for (int i = 0; i < fields.length; i += 2) {
            r.headers().add(fields[i], fields[i + 1]);
        }
        AuditEvent audit = new AuditEvent(records::add, Clock.systemUTC()).extension("agent");
        return new ForwardRequest(r, new HttpTarget("https", new Target(host, 443, null), uri), null, policy, audit,
                true, null);
    }

    private HttpContent content(String text, boolean last) {
        ByteBuf buf = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        given.add(buf);
        return last ? new DefaultLastHttpContent(buf) : new DefaultHttpContent(buf);
    }

    private static List<Object> drain(EmbeddedChannel ch, boolean inbound) {
        List<Object> out = new ArrayList<>();
        for (Object m; (m = inbound ? ch.readInbound() : ch.readOutbound()) != null; ) {
            out.add(m);
        }
        return out;
    }

    /** Bytes of the HttpContent messages in {@code out}, released. */
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

    private static void assertRefused(Object message, String reason, int status, String rule, String detail) {
        assertThat(message).isInstanceOf(ExchangeControl.Refuse.class);
        Decision d = ((ExchangeControl.Refuse) message).decision();
        assertThat(d.reason().label()).isEqualTo(reason);
        assertThat(d.reason().httpStatus()).isEqualTo(status);
        assertThat(d.ruleId()).isEqualTo(rule);
        assertThat(((ExchangeControl.Refuse) message).detail()).contains(detail);
    }

    @Test
    void aPlaceholderInAnAllowedHeaderGoesUpstreamAsTheRealValueAndIsRecorded() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "Authorization", "Bearer " + ph,
                "Accept-Encoding", "br, gzip"));
        List<Object> out = drain(ch, true);
        assertThat(out).hasSize(1);
        ForwardRequest forwarded = (ForwardRequest) out.get(0);
        assertThat(forwarded.request().headers().get("Authorization")).isEqualTo("Bearer " + REAL);
        assertThat(forwarded.request().headers().get("Accept-Encoding"))
                .as("an injected request asks for a body it can scrub as it streams").isEqualTo("identity");
        assertThat(forwarded.responseScan()).as("the coding guard on the response").isNotNull();
        forwarded.audit().emit();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.credentials()).containsExactly("llm"));
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aRequestWithoutPlaceholderPassesAsItCameKeepingOnlyReadableCodings() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "Authorization", "Bearer sk-own-0123456789",
                "Accept-Encoding", "br, gzip;q=0.8, zstd"));
        ForwardRequest forwarded = ch.readInbound();
        assertThat(forwarded.request().headers().get("Authorization")).isEqualTo("Bearer sk-own-0123456789");
        assertThat(forwarded.request().headers().get("Accept-Encoding")).isEqualTo("gzip;q=0.8");
        forwarded.audit().emit();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.credentials()).isNull());
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aPlaceholderForAHostOutsideInjectIsRefused403AndTheBodyIsDroppedAndReleased() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(OTHER, HttpMethod.POST, "/v1/chat", "Authorization", "Bearer " + ph,
                "Content-Length", "10"));
        List<Object> out = drain(ch, true);
        assertThat(out).hasSize(1);
        assertRefused(out.get(0), "credential_host_mismatch", 403, "credentials.llm",
                "to a host, port or path outside inject");
        ch.writeInbound(content("0123", false));
        ch.writeInbound(content("456789", true));
        assertThat(drain(ch, true)).as("the body is dropped; only its end goes on")
                .singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aPlaceholderThisPolicyDoesNotHandOutIsRefusedAsUnknown() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        String foreign = new Placeholders(new byte[Placeholders.KEY_BYTES]).placeholder("agent", "llm");
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "X-Api-Key", foreign));
        assertRefused(ch.readInbound(), "credential_host_mismatch", 403, "credentials.unknown",
                "not one this policy hands out");
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aPlaceholderOnALegSluiceDoesNotInterceptIsNeverSwapped() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, false));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "Authorization", "Bearer " + ph));
        assertRefused(ch.readInbound(), "credential_host_mismatch", 403, "credentials.llm",
                "on a leg Sluice does not intercept");
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aCredentialWhoseValueCannotBeReadIsRefused503() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "X-Gone",
                placeholders.placeholder("agent", "gone")));
        assertRefused(ch.readInbound(), "credential_unavailable", 503, "credentials.gone", "header x-gone");
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aPlaceholderInAChunkedJsonBodyIsSwappedAndTheBodyGoesOnWithItsNewLength() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.POST, "/v1/chat", "Content-Type", "application/json",
                "Transfer-Encoding", "chunked"));
        assertThat(drain(ch, true)).as("the head waits for the whole body").isEmpty();
        ch.writeInbound(content("{\"api_key\":\"" + ph.substring(0, 20), false));
        ch.writeInbound(content(ph.substring(20) + "\"}", true));
        List<Object> out = drain(ch, true);
        assertThat(out).hasSize(2);
        ForwardRequest head = (ForwardRequest) out.get(0);
        String expected = "{\"api_key\":\"" + REAL + "\"}";
        assertThat(head.request().headers().get("Content-Length")).isEqualTo(String.valueOf(expected.length()));
        assertThat(head.request().headers().contains("Transfer-Encoding")).isFalse();
        assertThat(out.get(1)).isInstanceOf(LastHttpContent.class);
        assertThat(bodyOf(out)).isEqualTo(expected);
        head.audit().emit();
        assertThat(records).singleElement().satisfies(r -> assertThat(r.credentials()).containsExactly("llm"));
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aPlaceholderInABodyTooLargeToHoldAbortsTheExchangeBeforeItIsRelayed() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.POST, "/v1/chat", "Content-Type", "text/plain",
                "Content-Length", "4000"));
        List<Object> first = drain(ch, true);
        assertThat(first).singleElement().isInstanceOf(ForwardRequest.class);
        ch.writeInbound(content("a".repeat(1500), false));
        ch.writeInbound(content("b".repeat(1000) + ph + "c".repeat(1500 - ph.length()), false));
        List<Object> out = drain(ch, true);
        assertThat(out.get(out.size() - 1)).isInstanceOf(ExchangeControl.Abort.class);
        ExchangeControl.Abort abort = (ExchangeControl.Abort) out.get(out.size() - 1);
        assertThat(abort.decision().reason().label()).isEqualTo("credential_host_mismatch");
        assertThat(abort.decision().ruleId()).isEqualTo("credentials.llm");
        assertThat(bodyOf(out)).as("no byte of the placeholder went on").doesNotContain(ph.substring(0, 12));
        ch.writeInbound(content("d".repeat(1000), true));
        assertThat(drain(ch, true)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aBodyInACodingThePhaseCannotReadIsRefused415() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.POST, "/v1/chat", "Content-Encoding", "br",
                "Content-Length", "3"));
        assertRefused(ch.readInbound(), "unsupported_encoding", 415, "credentials",
                "request Content-Encoding br cannot be searched");
        ch.writeInbound(content("abc", true));
        assertThat(drain(ch, true)).singleElement().isSameAs(LastHttpContent.EMPTY_LAST_CONTENT);
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void theRealValueEchoedInAResponseIsWrittenAsThePlaceholderEvenSplitAcrossChunks() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "Authorization", "Bearer " + ph));
        ForwardRequest forwarded = ch.readInbound();
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set("Content-Length", "100").set("X-Echo", "got " + REAL);
        assertThat(forwarded.responseScan().refuseHead(head)).as("identity is scrubbable").isNull();
        ch.writeOutbound(head);
        ch.writeOutbound(content("you sent " + REAL.substring(0, 10), false));
        ch.writeOutbound(content(REAL.substring(10) + " and bye", true));
        List<Object> out = drain(ch, false);
        HttpResponse written = (HttpResponse) out.get(0);
        assertThat(written.headers().get("X-Echo")).isEqualTo("got " + ph);
        assertThat(written.headers().contains("Content-Length")).as("the body's length changes").isFalse();
        assertThat(written.headers().get("Transfer-Encoding")).isEqualTo("chunked");
        assertThat(out.get(out.size() - 1)).isInstanceOf(LastHttpContent.class);
        assertThat(bodyOf(out)).isEqualTo("you sent " + ph + " and bye");
        assertAllGivenReleased();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aResponseInACodingThatCannotBeScrubbedIsRefusedBeforeItsHeadIsRelayed() {
        EmbeddedChannel ch = new EmbeddedChannel(new CredentialPhase(credentials, true));
        ch.writeInbound(request(API, HttpMethod.GET, "/v1/models", "Authorization", "Bearer " + ph));
        ForwardRequest forwarded = ch.readInbound();
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set("Content-Encoding", "br");
        ExchangeControl.Abort refusal = forwarded.responseScan().refuseHead(head);
        assertThat(refusal).isNotNull();
        assertThat(refusal.decision().reason().label()).isEqualTo("response_not_scrubbable");
        assertThat(refusal.decision().reason().httpStatus()).isEqualTo(502);
        assertThat(refusal.detail()).isEqualTo("response Content-Encoding br cannot be scrubbed of credentials; "
                + "not relayed");
        assertThat(ch.finish()).isFalse();
    }
}
