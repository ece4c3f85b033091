package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Token usage and the token budget over real interception: a client through Sluice to a WireMock TLS
 * origin answering each provider's JSON and event-stream shapes; the audit record, the metric and the
 * budget's 429 are what is checked.
 */
class LlmUsageTest {

    private static final String HOST = "api.llm.test";

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;

    @BeforeEach
    void startOrigin() throws IOException {
        origin = Origins.start(TestTls.create(dir.resolve("origin-tls"), HOST));
        origin.server().stubFor(any(anyUrl()).willReturn(aResponse().withStatus(200).withBody("{\"ok\":true}")));
    }

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private void start(String limits) throws Exception {
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$d]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { redact: true }
                tls:
                  extra_trust: ["%3$s"]
                limits:
                  %4$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.httpsPort(), origin.caPem().toAbsolutePath(), limits));
    }

    record Shape(String name, String contentType, String body, String model, long in, long out) {
    }

    static final List<Shape> SHAPES = List.of(
            new Shape("openai-chat", "application/json", "{\"id\":\"chatcmpl-1\",\"model\":\"gpt-4o-mini\",\"choices\":[],"
                    + "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":7,\"total_tokens\":19}}", "gpt-4o-mini", 12, 7),
            new Shape("openai-responses", "application/json", "{\"id\":\"resp_1\",\"object\":\"response\",\"model\":\"gpt-4.1\","
                    + "\"usage\":{\"input_tokens\":30,\"output_tokens\":5}}", "gpt-4.1", 30, 5),
            new Shape("anthropic", "application/json", "{\"type\":\"message\",\"model\":\"claude-sonnet-4\","
                    + "\"usage\":{\"input_tokens\":25,\"output_tokens\":9}}", "claude-sonnet-4", 25, 9),
            new Shape("gemini", "application/json; charset=UTF-8", "{\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":8,"
                    + "\"candidatesTokenCount\":4},\"modelVersion\":\"gemini-2.0-flash\"}", "gemini-2.0-flash", 8, 4),
            new Shape("openai-chat-sse", "text/event-stream",
                    "data: {\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"h\"}}],\"usage\":null}\n\n"
                    + "data: {\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2}}\n\n"
                    + "data: [DONE]\n\n", "gpt-4o-mini", 11, 2),
            new Shape("openai-responses-sse", "text/event-stream",
                    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-4.1\",\"usage\":null}}\n\n"
                    + "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-4.1\","
                    + "\"usage\":{\"input_tokens\":40,\"output_tokens\":6}}}\n\n", "gpt-4.1", 40, 6),
            new Shape("anthropic-sse", "text/event-stream",
                    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4\","
                    + "\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n"
                    + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\n\n"
                    + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"
                    + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", "claude-sonnet-4", 25, 15),
            new Shape("gemini-sse", "text/event-stream",
                    "data: {\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":1},\"modelVersion\":\"gemini-2.0-flash\"}\r\n\r\n"
                    + "data: {\"usageMetadata\":{\"promptTokenCount\":8,\"candidatesTokenCount\":5},\"modelVersion\":\"gemini-2.0-flash\"}\r\n\r\n",
                    "gemini-2.0-flash", 8, 5));

    @Test
    void usageOfEachProvidersJsonAndEventStreamShapesReachesTheRecordAndTheMetric() throws Exception {
        start("max_header_bytes: 32768");
        long in = 0;
        long out = 0;
        for (Shape shape : SHAPES) {
            origin.server().stubFor(post(urlEqualTo("/" + shape.name())).willReturn(aResponse().withStatus(200)
                    .withHeader("Content-Type", shape.contentType())
                    .withBody(shape.body()).withChunkedDribbleDelay(4, 200)));
            HttpResponse<String> response = send("/" + shape.name());
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body()).as("the body reaches the client unchanged").isEqualTo(shape.body());
            JsonNode record = record("/" + shape.name());
            assertThat(record.path("llm.model").asText()).as(shape.name()).isEqualTo(shape.model());
            assertThat(record.path("llm.usage.input_tokens").asLong()).as(shape.name()).isEqualTo(shape.in());
            assertThat(record.path("llm.usage.output_tokens").asLong()).as(shape.name()).isEqualTo(shape.out());
            in += shape.in();
            out += shape.out();
        }
        String scrape = sluice.server().metrics().scrape();
        assertThat(scrape).contains("sluice_llm_tokens_total{extension=\"default\",host=\"" + HOST + "\",kind=\"input\"} "
                + in + ".0");
        assertThat(scrape).contains("sluice_llm_tokens_total{extension=\"default\",host=\"" + HOST + "\",kind=\"output\"} "
                + out + ".0");
    }

    @Test
    void aGzipResponseIsReadDecoded() throws Exception {
        start("max_header_bytes: 32768");
        Shape shape = SHAPES.get(2);
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(gz)) {
            z.write(shape.body().getBytes(StandardCharsets.UTF_8));
        }
        origin.server().stubFor(post(urlEqualTo("/gz")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withHeader("Content-Encoding", "gzip")
                .withBody(gz.toByteArray())));
        assertThat(send("/gz").statusCode()).isEqualTo(200);
        JsonNode record = record("/gz");
        assertThat(record.path("llm.model").asText()).isEqualTo("claude-sonnet-4");
        assertThat(record.path("llm.usage.input_tokens").asLong()).isEqualTo(25);
        assertThat(record.path("llm.usage.output_tokens").asLong()).isEqualTo(9);
    }

    @Test
    void onceTheTokenBudgetIsSpentTheNextRequestIs429TokenBudget() throws Exception {
        start("token_budget: {tokens: 30, window: 1h}");
        Shape shape = SHAPES.get(0); // 19 tokens a response
        origin.server().stubFor(post(urlEqualTo("/v1/chat/completions")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", shape.contentType()).withBody(shape.body())));
        assertThat(send("/v1/chat/completions").statusCode()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> records("/v1/chat/completions").size() == 1);
        assertThat(send("/v1/chat/completions").statusCode()).as("19 of 30 used: still allowed").isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> records("/v1/chat/completions").size() == 2);

        HttpResponse<String> refused = send("/v1/chat/completions");
        assertThat(refused.statusCode()).isEqualTo(429);
        assertThat(refused.body()).contains("token_budget");
        List<JsonNode> all = await().atMost(Duration.ofSeconds(10)).until(() -> records("/v1/chat/completions"),
                r -> r.size() == 3);
        List<JsonNode> refusals = all.stream().filter(r -> "token_budget".equals(r.path("reason").asText())).toList();
        assertThat(refusals).hasSize(1);
        assertThat(refusals.get(0).path("decision").asText()).isEqualTo("deny");
        assertThat(refusals.get(0).path("rule").asText()).isEqualTo("limits.token_budget");
        assertThat(refusals.get(0).path("http.response.status_code").asInt()).isEqualTo(429);
        assertThat(origin.server().findAll(postRequestedFor(urlEqualTo("/v1/chat/completions")))).hasSize(2);
    }

    private HttpResponse<String> send(String path) throws Exception {
        HttpClient client = HttpClient.newBuilder()
                .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                .sslContext(TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem")))
                .version(HttpClient.Version.HTTP_1_1)
                .build();
        return client.send(HttpRequest.newBuilder(URI.create("https://" + HOST + ":" + origin.httpsPort() + path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"messages\":[]}")).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private List<JsonNode> records(String path) {
        return sluice.audit().stream().filter(r -> r.path("url.path").asText().equals(path)).toList();
    }

    private JsonNode record(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> records(path).stream().findFirst().orElse(null),
                r -> r != null);
    }
}
