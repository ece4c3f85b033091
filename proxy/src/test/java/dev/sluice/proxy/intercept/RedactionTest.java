package dev.sluice.proxy.intercept;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.any;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import dev.sluice.proxy.testing.Origins;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.SteppedSseOrigin;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.proxy.testing.TrustOnly;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redaction of outbound bodies to an inspected host, over real sockets through interception to a
 * WireMock TLS origin, checking what the origin received (and what a client reads of a streamed answer,
 * from a {@link SteppedSseOrigin} that sends each event only once the one before was read).
 */
class RedactionTest {

    private static final String HOST = "api.llm.test";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    @TempDir
    Path dir;
    private Origins origin;
    private SluiceFixture sluice;
    private final Random random = new Random(42);

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

    private void start(String redaction, String limits) throws Exception {
        start(redaction, limits, origin.httpsPort());
    }

    /** Starts Sluice allowing {@link #HOST} on {@code ports} (the WireMock origin's HTTPS port among them or not). */
    private void start(String redaction, String limits, int... ports) throws Exception {
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default:
                    allow:
                      - host: %1$s
                        ports: [%2$s]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    %1$s: 127.0.0.1
                inspect:
                  %1$s: { redact: true }
                tls:
                  extra_trust: ["%3$s"]
                redaction:
                  %4$s
                limits:
                  %5$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, java.util.Arrays.stream(ports).mapToObj(String::valueOf)
                        .collect(java.util.stream.Collectors.joining(", ")), origin.caPem().toAbsolutePath(), redaction,
                        limits));
    }

    /** A made-up key of the Anthropic shape (never a real one), built at run time. */
    private String anthropicKey() {
        StringBuilder b = new StringBuilder("sk-ant-").append("api03-");
        String urlsafe = ALNUM + "_-";
        for (int i = 0; i < 93; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.append("AA").toString();
    }

    private SSLContext trustingOnlySluice() throws Exception {
        return TrustOnly.of(sluice.dataDir().resolve("ca.crt.pem"));
    }

    /** A TLS connection through a CONNECT tunnel, for requests written by hand. */
    private SSLSocket tunnel() throws Exception {
        Socket socket = new Socket("127.0.0.1", sluice.port());
        socket.setSoTimeout(15_000);
        String target = HOST + ":" + origin.httpsPort();
        socket.getOutputStream().write(("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        readHead(socket.getInputStream());
        SSLSocket tls = (SSLSocket) trustingOnlySluice().getSocketFactory().createSocket(socket, HOST,
                origin.httpsPort(), true);
        tls.startHandshake();
        return tls;
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed after: " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    /** Reads one response (Content-Length or chunked) and returns "status body". */
    private static String readResponse(InputStream in) throws IOException {
        String head = readHead(in);
        int status = Integer.parseInt(head.split(" ")[1]);
        int length = 0;
        boolean chunked = false;
        for (String line : head.split("\r\n")) {
            String lower = line.toLowerCase();
            if (lower.startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            } else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                chunked = true;
            }
        }
        if (!chunked) {
            return status + " " + new String(in.readNBytes(length), StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            StringBuilder size = new StringBuilder();
            for (int b; (b = in.read()) != '\n'; ) {
                if (b < 0) {
                    throw new IOException("closed in a chunk header");
                }
                size.append((char) b);
            }
            int n = Integer.parseInt(size.toString().trim().split(";")[0], 16);
            if (n == 0) {
                readHead(new java.io.SequenceInputStream(
                        new java.io.ByteArrayInputStream("\r\n".getBytes(StandardCharsets.US_ASCII)), in));
                break;
            }
            body.write(in.readNBytes(n));
            in.readNBytes(2);
        }
        return status + " " + body.toString(StandardCharsets.UTF_8);
    }

    private static String chunk(String data) {
        return Integer.toHexString(data.getBytes(StandardCharsets.UTF_8).length) + "\r\n" + data + "\r\n";
    }

    private String received(String path) {
        List<LoggedRequest> seen = origin.server().findAll(postRequestedFor(urlEqualTo(path)));
        assertThat(seen).as("the origin got " + path).hasSize(1);
        return seen.get(0).getBodyAsString();
    }

    @Test
    void aKeySplitAcrossTwoChunksAtEveryOffsetIsRedacted() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        String prefix = "{\"messages\":[{\"role\":\"user\",\"content\":\"tool output: ";
        String body = prefix + key + " done\"}]}";
        try (SSLSocket tls = tunnel()) {
            OutputStream out = tls.getOutputStream();
            InputStream in = tls.getInputStream();
            for (int cut = prefix.length(); cut <= prefix.length() + key.length(); cut++) {
                out.write(("POST /split/" + cut + " HTTP/1.1\r\nHost: " + HOST + ":" + origin.httpsPort()
                        + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(chunk(body.substring(0, cut)).getBytes(StandardCharsets.UTF_8));
                out.flush();
                out.write((chunk(body.substring(cut)) + "0\r\n\r\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
                assertThat(readResponse(in)).isEqualTo("200 {\"ok\":true}");
                String got = received("/split/" + cut);
                assertThat(got).as("cut at %d", cut).doesNotContain(key.substring(20, 40))
                        .isEqualTo(prefix + "[REDACTED:anthropic-api-key] done\"}]}");
            }
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().startsWith("/split/")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
        assertThat(sluice.audit().toString()).doesNotContain(key.substring(20, 40));
    }

    @Test
    void aGzipBodyIsDecodedRedactedAndSentIdentityEncoded() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        byte[] json = ("{\"messages\":[{\"role\":\"user\",\"content\":\"export ANTHROPIC_API_KEY=" + key + "\"}]}")
                .getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(gz)) {
            g.write(json);
        }
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/gzip"))
                .header("Content-Type", "application/json").header("Content-Encoding", "gzip")
                .POST(HttpRequest.BodyPublishers.ofByteArray(gz.toByteArray())).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        LoggedRequest seen = origin.server().findAll(postRequestedFor(urlEqualTo("/gzip"))).get(0);
        assertThat(seen.containsHeader("Content-Encoding")).isFalse();
        assertThat(seen.getBodyAsString()).doesNotContain(key)
                .contains("[REDACTED:anthropic-api-key]");
        assertThat(JSON.readTree(seen.getBodyAsString()).path("messages").get(0).path("content").asText())
                .startsWith("export ANTHROPIC_API_KEY=[REDACTED:");
    }

    @Test
    void aPemKeyInsideAJsonStringIsRedactedAndTheJsonStillParses() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        StringBuilder pem = new StringBuilder("-----BEGIN RSA PRIVATE KEY-----\n");
        String b64 = ALNUM + "+/";
        for (int line = 0; line < 20; line++) {
            for (int i = 0; i < 64; i++) {
                pem.append(b64.charAt(random.nextInt(b64.length())));
            }
            pem.append('\n');
        }
        pem.append("-----END RSA PRIVATE KEY-----");
        String toolResult = "$ cat ~/.ssh/id_rsa\n" + pem + "\n$ ";
        String body = JSON.writeValueAsString(JSON.createObjectNode().set("messages", JSON.createArrayNode()
                .add(JSON.createObjectNode().put("role", "tool").put("content", toolResult))));
        assertThat(body).contains("\\n");
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/pem"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        String got = received("/pem");
        JsonNode parsed = JSON.readTree(got);
        String content = parsed.path("messages").get(0).path("content").asText();
        assertThat(content).isEqualTo("$ cat ~/.ssh/id_rsa\n[REDACTED:private-key-pem]\n$ ");
    }

    @Test
    void aBodyOverTheLimitGets413AndNothingUnscannedPasses() throws Exception {
        start("action: redact", "max_inspected_body: 64KiB");
        String big = "{\"content\":\"" + "a".repeat(100_000) + "\"}";
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/big"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(big)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(413);
        assertThat(response.body()).isEqualTo("sluice: body_too_large\n");
        assertThat(origin.server().findAll(postRequestedFor(urlEqualTo("/big")))).isEmpty();
    }

    @Test
    void blockModeAnswers403AndAnUnknownEncoding415() throws Exception {
        start("action: block", "max_header_bytes: 32768");
        String key = anthropicKey();
        HttpResponse<String> blocked = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/block"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"content\":\"" + key + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(blocked.statusCode()).isEqualTo(403);
        assertThat(blocked.body()).isEqualTo("sluice: credential_detected\n");
        assertThat(origin.server().findAll(postRequestedFor(urlEqualTo("/block")))).isEmpty();

        HttpResponse<String> brotli = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/br"))
                .header("Content-Type", "application/json").header("Content-Encoding", "br")
                .POST(HttpRequest.BodyPublishers.ofString("xx")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(brotli.statusCode()).isEqualTo(415);
    }

    /** A made-up GitHub token shape (ghp_ and 36 characters), never a real one. */
    private String githubToken() {
        StringBuilder b = new StringBuilder("ghp_");
        for (int i = 0; i < 36; i++) {
            b.append(ALNUM.charAt(random.nextInt(ALNUM.length())));
        }
        return b.toString();
    }

    @Test
    void aTokenInThePathOrABareQueryIsRedactedUpstreamAndNeverInTheRecord() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String path = githubToken();
        String query = githubToken();
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/repos/" + path + "/x?" + query)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        String seen = origin.server().getAllServeEvents().get(0).getRequest().getUrl();
        assertThat(seen).isEqualTo("/repos/%5BREDACTED%3Agithub-pat%5D/x?%5BREDACTED%3Agithub-pat%5D");
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText("").startsWith("/repos/")).findFirst().orElse(null),
                r -> r != null);
        assertThat(record.path("url.path").asText()).isEqualTo(seen);
        assertThat(record.path("redactions").path("github-pat").asLong()).isEqualTo(2);
        assertThat(sluice.audit().toString()).doesNotContain(path).doesNotContain(query);
    }

    @Test
    void blockModeRefusesATokenInThePath() throws Exception {
        start("action: block", "max_header_bytes: 32768");
        String token = githubToken();
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/t/" + token)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(403);
        assertThat(response.body()).isEqualTo("sluice: credential_detected\n");
        assertThat(origin.server().getAllServeEvents()).isEmpty();
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .anyMatch(r -> "credential_detected".equals(r.path("reason").asText(null))));
        assertThat(sluice.audit().toString()).doesNotContain(token).contains("%5BREDACTED%3Agithub-pat%5D");
    }

    @Test
    void aSigV4SignedBodyWithAKeyIsBlocked() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/model/invoke"))
                .header("Content-Type", "application/json")
                .header("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
                .header("Authorization", "AWS4-HMAC-SHA256 Credential=x/20261130/us-east-1/bedrock/aws4_request, "
                        + "SignedHeaders=host, Signature=00")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"" + key + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(403);
        assertThat(response.body()).isEqualTo("sluice: signed_body\n");
        assertThat(origin.server().findAll(postRequestedFor(urlEqualTo("/model/invoke")))).isEmpty();
    }

    @Test
    void anSseResponseReachesTheClientEventByEventAndACredentialInItIsCounted() throws Exception {
        String key = anthropicKey();
        List<String> events = new ArrayList<>();
        // the deltas are read as one text, as the model wrote it: each ends with a space (a key directly
        // followed by the next delta's letters would be no key in that text)
        for (int i = 0; i < 5; i++) {
            events.add("data: {\"delta\":\"part " + i + (i == 2 ? " " + key : "") + " \"}\n\n");
        }
        // The origin sends each next event only once the client has read the one before: a proxy that
        // held the answer back would leave the client waiting for an event the origin never sends.
        try (SteppedSseOrigin sse = SteppedSseOrigin.start(origin.tls(), events)) {
            start("action: redact", "max_header_bytes: 32768", sse.port());
            HttpResponse<java.util.stream.Stream<String>> response = client().send(HttpRequest.newBuilder(URI.create(
                    "https://" + HOST + ":" + sse.port() + "/sse")).build(), HttpResponse.BodyHandlers.ofLines());
            List<String> received = new ArrayList<>();
            for (java.util.Iterator<String> lines = response.body().iterator(); lines.hasNext(); ) {
                String line = lines.next();
                if (line.startsWith("data:")) {
                    received.add(line);
                    assertThat(sse.sent()).as("event %d reached the client before the origin sent the next",
                            received.size()).isEqualTo(received.size());
                    if (received.size() < events.size()) {
                        sse.next();
                    }
                }
            }
            assertThat(sse.gaveUp()).as("the origin waited in vain for the client to read an event").isFalse();
            assertThat(received).as("each event relayed as it came")
                    .containsExactlyElementsOf(events.stream().map(String::strip).toList());
        }
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/sse")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("response.anthropic-api-key").asLong()).isEqualTo(1);
    }

    @Test
    void aCredentialSplitAcrossTwoSseEventsOfTheResponseIsCountedOnceAndOtherValuesAreStillRead() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        String other = anthropicKey();
        // the model writes the key across two events (as a streamed answer does, a token at a time); another
        // key sits in a value that is no text (an id), read on its own
        String events = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
                + "\"text\":\"your key is " + key.substring(0, 40) + "\"}}\n\n"
                + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
                + "\"text\":\"" + key.substring(40) + " ok\"}}\n\n"
                + "event: message_delta\ndata: {\"type\":\"message_delta\",\"id\":\"" + other + "\","
                + "\"usage\":{\"output_tokens\":12}}\n\n";
        origin.server().stubFor(get(urlEqualTo("/split")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "text/event-stream").withBody(events).withChunkedDribbleDelay(3, 300)));
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/split")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.body()).as("the response is relayed as it came").isEqualTo(events);
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/split")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("response.anthropic-api-key").asLong()).as(record.toString())
                .isEqualTo(2);
        assertThat(record.path("llm.usage.output_tokens").asLong()).as("usage from the same read").isEqualTo(12);
    }

    @Test
    void aCredentialInTheDataOfAnSseEventThatIsNotJsonIsCounted() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        // an event stream whose data is plain text (not every server writes JSON events), then [DONE]
        String events = "data: here is the key you asked for\ndata: " + key + "\n\n"
                + "data: {\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n"
                + "data: [DONE]\n\n";
        origin.server().stubFor(get(urlEqualTo("/plain-sse")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "text/event-stream").withBody(events)));
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/plain-sse")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.body()).as("the response is relayed as it came").isEqualTo(events);
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/plain-sse")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("response.anthropic-api-key").asLong()).as(record.toString())
                .isEqualTo(1);
        assertThat(record.path("llm.usage.output_tokens").asLong()).isEqualTo(2);
    }

    @Test
    void aJsonResponsesCredentialsAreCountedInTheTextAndInTheOtherValuesWithTheirKeys() throws Exception {
        start("action: redact", "max_header_bytes: 32768");
        String key = anthropicKey();
        // a Docker config's auths entry is known by its key and quoted value; the generated text holds a key
        String auth = java.util.Base64.getEncoder().encodeToString("deploy:Sup3rS3cretPw9xQ".getBytes(StandardCharsets.UTF_8));
        String body = "{\"auths\":{\"registry.example.com\":{\"auth\":\"" + auth + "\"}},"
                + "\"content\":[{\"type\":\"text\",\"text\":\"use " + key + " here\"}],"
                + "\"usage\":{\"input_tokens\":3,\"output_tokens\":5}}";
        origin.server().stubFor(get(urlEqualTo("/json")).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody(body)));
        HttpResponse<String> response = client().send(HttpRequest.newBuilder(URI.create(
                "https://" + HOST + ":" + origin.httpsPort() + "/json")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.body()).isEqualTo(body);
        JsonNode record = await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().equals("/json")).findFirst().orElse(null), r -> r != null);
        assertThat(record.path("redactions").path("response.docker-config-auth").asLong()).as(record.toString()).isEqualTo(1);
        assertThat(record.path("redactions").path("response.anthropic-api-key").asLong()).as(record.toString()).isEqualTo(1);
        assertThat(record.path("llm.usage.input_tokens").asLong()).isEqualTo(3);
    }

    private HttpClient client() throws Exception {
        return HttpClient.newBuilder()
                .proxy(ProxySelector.of(new InetSocketAddress("127.0.0.1", sluice.port())))
                .sslContext(trustingOnlySluice())
                .version(HttpClient.Version.HTTP_1_1)
                .build();
    }
}
