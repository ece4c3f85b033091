package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.credential.PlaceholderKey;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import dev.sluice.rules.credential.Placeholders;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.identity.spi.AwsSessionCredentialsIdentity;

/**
 * AWS SigV4 re-signing end to end: a request signed by the AWS SDK's signer with the extension's
 * placeholder as access key id (and a made-up secret) goes through Sluice to a loopback TLS origin that
 * recomputes the signature with the same SDK signer and the REAL key pair: the re-signed request verifies,
 * a body changed after signing does not; unsigned and streaming payloads are refused by Sluice.
 */
class CredentialSigV4Test {

    private static final String HOST = "bedrock.aws.test";
    private static final String KEY_ID = "AKIAREALKEY000000001";
    private static final String SECRET = "realSecret/0123456789abcdefghijklmnopqrstu";
    private static final String TOKEN = "realSessionToken0123456789";
    private static final Pattern AUTH = Pattern.compile(
            "AWS4-HMAC-SHA256 Credential=([^/]+)/(\\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=(\\w+)");
    private static final DateTimeFormatter AMZ_DATE =
            DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    @TempDir
    Path dir;
    private RecordingOrigin origin;
    private SluiceFixture sluice;
    private String placeholder;

    @BeforeEach
    void start() throws Exception {
        TestTls tls = TestTls.create(dir.resolve("tls"), HOST);
        origin = RecordingOrigin.tls(tls, false);
        Path pair = dir.resolve("aws.json");
        // as `aws configure export-credentials --format process` prints it: JSON over several lines
        Files.writeString(pair, "{\n  \"Version\": 1,\n  \"AccessKeyId\": \"" + KEY_ID + "\",\n  \"SecretAccessKey\": \""
                + SECRET + "\",\n  \"SessionToken\": \"" + TOKEN + "\"\n}\n");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  agent:
                    auth: { token_sha256: "%4$s" }
                    allow:
                      - { host: %1$s, ports: [%2$d] }
                    credentials: [aws]
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts: { %1$s: 127.0.0.1 }
                inspect:
                  %1$s: {}
                tls:
                  extra_trust: ["%3$s"]
                credentials:
                  aws:
                    source: { file: "%5$s" }
                    placeholder_env: AWS_ACCESS_KEY_ID
                    inject: { hosts: [%1$s], ports: [%2$d], sigv4: true }
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath(), sha256("tok-agent"), pair));
        Placeholders placeholders = PlaceholderKey.loadOrCreate(sluice.dataDir());
        placeholder = placeholders.placeholder("agent", "aws");
    }

    @AfterEach
    void stop() throws Exception {
        if (sluice != null) {
            sluice.close();
        }
        origin.close();
    }

    private static String sha256(String s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    }

    private String url(String path) {
        return "https://" + HOST + ":" + origin.port() + path;
    }

    /** Signs as the sandbox's AWS SDK would: the placeholder as key id, a secret the sandbox made up. */
    private Map<String, List<String>> clientSign(String path, byte[] body, boolean unsignedPayload) {
        SdkHttpRequest request = SdkHttpRequest.builder().method(SdkHttpMethod.POST).uri(URI.create(url(path)))
                .putHeader("Content-Type", "application/json").build();
        SignedRequest signed = AwsV4HttpSigner.create().sign(r -> r
                .identity(AwsCredentialsIdentity.create(placeholder, "sandbox-dummy-secret"))
                .request(request)
                .payload(ContentStreamProvider.fromByteArray(body))
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, "bedrock")
                .putProperty(AwsV4HttpSigner.REGION_NAME, "us-east-1")
                .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, !unsignedPayload));
        return signed.request().headers();
    }

    private CurlResult send(String path, Map<String, List<String>> headers, byte[] body) throws Exception {
        Path file = dir.resolve("body-" + System.nanoTime());
        Files.write(file, body);
        List<String> args = new ArrayList<>(List.of("-x", "http://agent:tok-agent@127.0.0.1:" + sluice.port(),
                "--cacert", sluice.dataDir().resolve("ca.crt.pem").toString(), "-H", "Expect:"));
        headers.forEach((name, values) -> {
            if (!name.equalsIgnoreCase("host")) {
                args.add("-H");
                args.add(name + ": " + values.get(0));
            }
        });
        args.add("--data-binary");
        args.add("@" + file);
        args.add(url(path));
        return Curl.run(args, Duration.ofSeconds(30));
    }

    /**
     * The origin's check, with the same SDK signer and the REAL key pair: recompute the signature of the
     * request as received (its signed headers, date, scope and body) and compare.
     */
    private static boolean verifies(RecordingOrigin.Seen seen, byte[] body) {
        String authorization = seen.header("authorization");
        Matcher m = AUTH.matcher(authorization == null ? "" : authorization);
        if (!m.matches() || !m.group(1).equals(KEY_ID)) {
            return false;
        }
        List<String> signedHeaders = List.of(m.group(5).split(";"));
        SdkHttpRequest.Builder request = SdkHttpRequest.builder()
                .method(SdkHttpMethod.fromValue(seen.method()))
                .uri(URI.create("https://" + seen.header("host") + seen.uri()));
        for (String name : signedHeaders) {
            if (!List.of("x-amz-date", "x-amz-content-sha256", "x-amz-security-token").contains(name)) {
                request.putHeader(name, seen.headers().get(name));
            }
        }
        Instant date = Instant.from(AMZ_DATE.parse(seen.header("x-amz-date")));
        SignedRequest expected = AwsV4HttpSigner.create().sign(r -> r
                .identity(AwsSessionCredentialsIdentity.create(KEY_ID, SECRET, TOKEN))
                .request(request.build())
                .payload(ContentStreamProvider.fromByteArray(body))
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, m.group(4))
                .putProperty(AwsV4HttpSigner.REGION_NAME, m.group(3))
                .putProperty(HttpSigner.SIGNING_CLOCK, Clock.fixed(date, ZoneOffset.UTC)));
        return expected.request().firstMatchingHeader("Authorization").orElse("").equals(authorization)
                && TOKEN.equals(seen.header("x-amz-security-token"));
    }

    private JsonNode lastAudit(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                        .filter(r -> r.path("url.path").asText("").startsWith(path)).reduce((a, b) -> b).orElse(null),
                r -> r != null);
    }

    @Test
    void aRequestSignedWithThePlaceholderIsSignedAgainWithTheRealPairAndVerifies() throws Exception {
        byte[] body = "{\"prompt\":\"hello\",\"max_tokens\":5}".getBytes(StandardCharsets.UTF_8);
        Map<String, List<String>> headers = clientSign("/model/m1/invoke", body, false);
        assertThat(headers.get("Authorization").get(0)).contains("Credential=" + placeholder + "/");
        CurlResult r = send("/model/m1/invoke", headers, body);
        assertThat(r.httpStatus()).as(r.stderr() + r.body()).isEqualTo(200);
        RecordingOrigin.Seen seen = origin.requests().get(0);
        assertThat(seen.body()).isEqualTo(body);
        assertThat(seen.header("authorization")).startsWith("AWS4-HMAC-SHA256 Credential=" + KEY_ID + "/")
                .contains("/us-east-1/bedrock/aws4_request").doesNotContain(placeholder);
        assertThat(verifies(seen, body)).as("the origin accepts the signature made with the real pair").isTrue();
        byte[] tampered = "{\"prompt\":\"HELLO\",\"max_tokens\":5}".getBytes(StandardCharsets.UTF_8);
        assertThat(verifies(seen, tampered)).as("a body changed after signing does not verify").isFalse();
        JsonNode audit = lastAudit("/model/m1/invoke");
        assertThat(audit.path("credentials").toString()).isEqualTo("[\"aws\"]");
        assertThat(audit.toString()).doesNotContain(SECRET).doesNotContain(TOKEN);
    }

    @Test
    void aBodyChangedAfterTheClientSignedItIsRefused() throws Exception {
        byte[] body = "{\"prompt\":\"hello\"}".getBytes(StandardCharsets.UTF_8);
        Map<String, List<String>> headers = clientSign("/model/m1/invoke", body, false);
        CurlResult r = send("/model/m1/invoke", headers, "{\"prompt\":\"other\"}".getBytes(StandardCharsets.UTF_8));
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        assertThat(r.body()).contains("sigv4_refused");
        assertThat(origin.requests()).isEmpty();
        assertThat(lastAudit("/model/m1/invoke").path("error").asText()).contains("x-amz-content-sha256");
    }

    @Test
    void anUnsignedOrStreamingPayloadIsRefusedUnlessThePolicyAllowsIt() throws Exception {
        byte[] body = "{\"prompt\":\"hello\"}".getBytes(StandardCharsets.UTF_8);
        Map<String, List<String>> headers = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        headers.putAll(clientSign("/model/m1/invoke", body, true));
        headers.put("x-amz-content-sha256", List.of("UNSIGNED-PAYLOAD"));
        CurlResult r = send("/model/u/invoke", headers, body);
        assertThat(r.httpStatus()).as(r.stderr()).isEqualTo(403);
        assertThat(r.body()).contains("sigv4_refused");
        headers.put("x-amz-content-sha256", List.of("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"));
        CurlResult s = send("/model/s/invoke", headers, body);
        assertThat(s.httpStatus()).isEqualTo(403);
        assertThat(origin.requests()).as("the origin saw nothing").isEmpty();
        JsonNode audit = lastAudit("/model/u/invoke");
        assertThat(audit.path("reason").asText()).isEqualTo("sigv4_refused");
        assertThat(audit.path("rule").asText()).isEqualTo("credentials.aws");
        assertThat(audit.path("error").asText()).contains("UNSIGNED-PAYLOAD");

        // with sigv4_unsigned_payload: true the request is signed again, unsigned
        String yaml = Files.readString(sluice.dataDir().resolve("policy.yaml"));
        sluice.writePolicy(yaml.replace("sigv4: true", "sigv4: true, sigv4_unsigned_payload: true"));
        assertThat(sluice.reloader().reload()).isEqualTo(dev.sluice.proxy.server.PolicyReloader.Result.OK);
        headers.put("x-amz-content-sha256", List.of("UNSIGNED-PAYLOAD"));
        CurlResult ok = send("/model/u2/invoke", headers, body);
        assertThat(ok.httpStatus()).as(ok.stderr() + ok.body()).isEqualTo(200);
        RecordingOrigin.Seen seen = origin.requests().get(0);
        assertThat(seen.header("x-amz-content-sha256")).isEqualTo("UNSIGNED-PAYLOAD");
        assertThat(seen.header("authorization")).contains("Credential=" + KEY_ID + "/");
    }

    /** The placeholder as key id anywhere the credential is not bound to is refused like any other. */
    @Test
    void theSigV4PlaceholderIsNeverSentAsItIs() throws Exception {
        byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
        Map<String, List<String>> headers = clientSign("/x", body, false);
        assertThat(headers.get("Authorization").get(0).toLowerCase(Locale.ROOT)).contains("sluice-cred-aws-");
        CurlResult viaPlainHttp = Curl.run(List.of("-x", "http://agent:tok-agent@127.0.0.1:" + sluice.port(),
                "-H", "Authorization: " + headers.get("Authorization").get(0),
                "http://" + HOST + ":" + origin.port() + "/x"), Duration.ofSeconds(30));
        assertThat(viaPlainHttp.httpStatus()).isEqualTo(403);
        assertThat(origin.requests()).isEmpty();
    }
}
