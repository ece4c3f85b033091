package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.audit.AuditEvent;
import dev.sluice.proxy.audit.AuditRecord;
import dev.sluice.proxy.capture.CaptureStore;
import dev.sluice.proxy.core.ProxyContext;
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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CapturePhase} on an {@link EmbeddedChannel}, with a policy parsed by the policy loader and a
 * real {@link CaptureStore} in a temp dir (closed, which waits for its writer, before a capture is
 * read): every message passes on as it came, a sampled exchange to a covered host is marked and
 * written with its request and response bodies, one cut short is written when the next request comes,
 * and an uncovered or unsampled one is neither marked nor written.
 */
class CapturePhaseAnswersTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String API = "api.llm.test";

    @TempDir
    Path dir;
    private CaptureStore store;
    private final List<AuditRecord> records = new ArrayList<>();
    private final List<ByteBuf> given = new ArrayList<>();

    private ProxyContext context() {
        ProxyContext c = EmbeddedContext.create("version: 1\n");
        store = CaptureStore.start(dir, c.clock());
        return new ProxyContext(c.policies(), c.auditLog(), c.audit(), null, c.clock(), c.metrics(), c.connections(),
                null, c.budgets(), null, null, store);
    }

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
    }

    private static Policy policy(String capture) throws Exception {
        return PolicyLoader.parse("version: 1\ninspect:\n  " + API + ": {}\n  other.llm.test: {}\ncapture: "
                + capture + "\n", "p.yaml");
    }

    private ForwardRequest request(Policy policy, String host, String uri, String... fields) {
        HttpRequest r = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, uri);
        r.headers().set("Host", host).set("Content-Type", "application/json");
        for (int i = 0; i < fields.length; i += 2) {
            r.headers().set(fields[i], fields[i + 1]);
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

    /** Writes {@code messages} inbound; each must come out as the very same object (a request may gain a scan). */
    private static ForwardRequest passes(EmbeddedChannel ch, ForwardRequest request, HttpContent... body) {
        ch.writeInbound(request);
        ForwardRequest out = ch.readInbound();
        assertThat(out.request()).isSameAs(request.request());
        for (HttpContent c : body) {
            ch.writeInbound(c);
            assertThat((Object) ch.readInbound()).isSameAs(c);
            assertThat(c.refCnt()).as("passed on, not consumed").isEqualTo(1);
            c.release();
        }
        assertThat((Object) ch.readInbound()).isNull();
        return out;
    }

    private static void respond(ForwardRequest forwarded, String body, boolean complete) {
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CREATED);
        head.headers().set("Content-Type", "application/json");
        forwarded.responseScan().onHead(head);
        ByteBuf buf = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
        forwarded.responseScan().onContent(buf, complete, forwarded.audit());
        buf.release();
    }

    private AuditRecord emitted(AuditEvent audit) {
        records.clear();
        audit.emit();
        return records.get(0);
    }

    private JsonNode written(String eventId) throws Exception {
        store.close();
        Path file = CaptureStore.file(dir, eventId);
        assertThat(file).exists();
        return JSON.readTree(Files.readAllBytes(file));
    }

    @Test
    void aSampledExchangeIsMarkedAndWrittenWithBothBodiesWhileEveryMessagePassesAsItCame() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new CapturePhase(context()));
        ForwardRequest request = request(policy("{ hosts: [" + API + "], sample: 1.0 }"), API, "/v1/messages?key=s3cret",
                "Transfer-Encoding", "chunked");
        ForwardRequest forwarded = passes(ch, request, content("{\"q\":", false), content("\"hi\"}", true));
        assertThat(forwarded.responseScan()).isNotNull();
        respond(forwarded, "{\"a\":\"there\"}", true);
        assertThat(emitted(forwarded.audit()).capture()).isTrue();
        JsonNode capture = written(forwarded.audit().eventId());
        assertThat(capture.path("server.address").asText()).isEqualTo(API);
        assertThat(capture.path("extension").asText()).isEqualTo("agent");
        assertThat(capture.path("url.path").asText()).doesNotContain("s3cret");
        assertThat(capture.path("request").path("body").asText()).isEqualTo("{\"q\":\"hi\"}");
        assertThat(capture.path("response").path("status_code").asInt()).isEqualTo(201);
        assertThat(capture.path("response").path("body").asText()).isEqualTo("{\"a\":\"there\"}");
        assertThat(capture.path("response").path("complete").asBoolean()).isTrue();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aRequestBodyPastMaxBodyBytesIsCutAndMarkedTruncated() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new CapturePhase(context()));
        ForwardRequest request = request(policy("{ hosts: [" + API + "], max_body_bytes: 8 }"), API, "/v1/big",
                "Content-Length", "20");
        ForwardRequest forwarded = passes(ch, request, content("0123456789", false), content("abcdefghij", true));
        respond(forwarded, "{}", true);
        JsonNode body = written(forwarded.audit().eventId()).path("request");
        assertThat(body.path("body").asText()).isEqualTo("01234567");
        assertThat(body.path("body_bytes").asInt()).isEqualTo(8);
        assertThat(body.path("truncated").asBoolean()).isTrue();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void anExchangeCutShortIsWrittenWhenTheNextRequestComes() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new CapturePhase(context()));
        Policy policy = policy("{ hosts: [" + API + "] }");
        ForwardRequest first = passes(ch, request(policy, API, "/v1/one", "Content-Length", "2"),
                content("{}", true));
        respond(first, "{\"partial\":", false);
        passes(ch, request(policy, "other.llm.test", "/v1/two"));
        JsonNode capture = written(first.audit().eventId());
        assertThat(capture.path("url.path").asText()).isEqualTo("/v1/one");
        assertThat(capture.path("response").path("body").asText()).isEqualTo("{\"partial\":");
        assertThat(capture.path("response").path("complete").asBoolean()).isFalse();
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void aHostNotUnderCaptureAndAnUnsampledExchangeAreNeitherMarkedNorWritten() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel(new CapturePhase(context()));
        ForwardRequest uncovered = request(policy("{ hosts: [" + API + "] }"), "other.llm.test", "/v1/other");
        ch.writeInbound(uncovered);
        assertThat((Object) ch.readInbound()).as("nothing to add: the very request").isSameAs(uncovered);
        ForwardRequest unsampled = request(policy("{ hosts: [" + API + "], sample: 0 }"), API, "/v1/none");
        ch.writeInbound(unsampled);
        assertThat((Object) ch.readInbound()).isSameAs(unsampled);
        assertThat(emitted(uncovered.audit()).capture()).isNull();
        assertThat(emitted(unsampled.audit()).capture()).isNull();
        assertThat(ch.finish()).isFalse();
        store.close();
        assertThat(CaptureStore.file(dir, uncovered.audit().eventId())).doesNotExist();
        assertThat(CaptureStore.file(dir, unsampled.audit().eventId())).doesNotExist();
        assertThat(store.written()).isZero();
    }
}
