package dev.sluice.proxy.credential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.rules.credential.SigV4Placeholder;
import java.net.URI;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import software.amazon.awssdk.http.ContentStreamProvider;
import software.amazon.awssdk.http.SdkHttpMethod;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.http.auth.aws.signer.AwsV4HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.HttpSigner;
import software.amazon.awssdk.http.auth.spi.signer.SignedRequest;
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity;
import software.amazon.awssdk.identity.spi.AwsSessionCredentialsIdentity;

/**
 * Signs a request again with a real AWS key pair, with the AWS SDK for Java v2's {@link AwsV4HttpSigner}
 * (AWS Signature Version 4, header form): the client's region, service, date ({@code X-Amz-Date}) and
 * signed headers are kept, the payload hash is computed over the body as it goes upstream, and
 * {@code X-Amz-Security-Token} is set when the pair has a session token. No signing code of Sluice's own.
 *
 * <p>A key pair is the credential's value as JSON: {@code {"access_key_id": ..., "secret_access_key":
 * ..., "session_token": ...}} (session token optional), or the AWS CLI's {@code credential_process}
 * output ({@code AccessKeyId}, {@code SecretAccessKey}, {@code SessionToken}), e.g. from
 * {@code aws configure export-credentials --format process}. At load, {@link #canonical} reads it as
 * JSON or YAML (over several lines) and keeps it as one line of JSON.
 */
public final class SigV4Signer {

    private static final AwsV4HttpSigner SIGNER = AwsV4HttpSigner.create();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ObjectMapper YAML = new com.fasterxml.jackson.dataformat.yaml.YAMLMapper();
    private static final DateTimeFormatter AMZ_DATE =
            DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
    /** Headers the signer sets itself, never taken from the client. */
    private static final Set<String> SIGNER_SET = Set.of("authorization", "x-amz-date", "x-amz-content-sha256",
            "x-amz-security-token");

    private SigV4Signer() {
    }

    /**
     * A real key pair. {@link #toString()} masks it.
     *
     * @param accessKeyId the access key id
     * @param secretAccessKey the secret access key
     * @param sessionToken the session token, or null
     */
    public record KeyPair(String accessKeyId, String secretAccessKey, String sessionToken) {
        @Override
        public String toString() {
            return "KeyPair[****]";
        }
    }

    /** The headers to set on the request (replacing any of the same name), in the signer's spelling. */
    public record Signature(Map<String, String> headers) {
        @Override
        public String toString() {
            return "Signature[****]";
        }
    }

    /**
     * Reads a key pair from a credential's value.
     *
     * @return the pair, or null when the value is not one (not JSON, or no key id or secret)
     */
    public static KeyPair keyPair(String value) {
        if (value == null) {
            return null;
        }
        try {
            JsonNode n = JSON.readTree(value);
            if (n == null || !n.isObject()) {
                return null;
            }
            String id = text(n, "access_key_id", "AccessKeyId");
            String secret = text(n, "secret_access_key", "SecretAccessKey");
            String token = text(n, "session_token", "SessionToken");
            return id == null || secret == null ? null : new KeyPair(id, secret, token);
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /**
     * Reads a key pair written as JSON or YAML (several lines allowed) and returns it as one line of JSON
     * ({@code access_key_id}, {@code secret_access_key}, {@code session_token}), or null when it is not one.
     */
    public static String canonical(String text) {
        try {
            JsonNode n = YAML.readTree(text);
            if (n == null || !n.isObject()) {
                return null;
            }
            String id = text(n, "access_key_id", "AccessKeyId");
            String secret = text(n, "secret_access_key", "SecretAccessKey");
            String token = text(n, "session_token", "SessionToken");
            if (id == null || secret == null) {
                return null;
            }
            com.fasterxml.jackson.databind.node.ObjectNode out = JSON.createObjectNode()
                    .put("access_key_id", id).put("secret_access_key", secret);
            if (token != null) {
                out.put("session_token", token);
            }
            return JSON.writeValueAsString(out);
        } catch (java.io.IOException e) {
            return null;
        }
    }

    private static String text(JsonNode n, String snake, String pascal) {
        JsonNode v = n.has(snake) ? n.get(snake) : n.get(pascal);
        return v != null && v.isTextual() && !v.asText().isBlank() ? v.asText() : null;
    }

    /** Returns the lower-case hex SHA-256 of {@code body} (SigV4's payload hash). */
    public static String sha256Hex(byte[] body) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    /**
     * Signs a request again.
     *
     * @param pair the real key pair
     * @param signed what the client's {@code Authorization} said (region, service, signed headers)
     * @param method the request method
     * @param authority the request's {@code host[:port]} as in its {@code Host} field
     * @param uri the origin-form request-target
     * @param headers the request's header fields as they go upstream
     * @param body the body exactly as it goes upstream (empty for none)
     * @param unsignedPayload whether the client sent {@code UNSIGNED-PAYLOAD} (and the policy allows it)
     * @return the headers to set
     */
    public static Signature sign(KeyPair pair, SigV4Placeholder.Signed signed, String method, String authority,
                                 String uri, List<Map.Entry<String, String>> headers, byte[] body,
                                 boolean unsignedPayload) {
        SdkHttpRequest.Builder request = SdkHttpRequest.builder()
                .method(SdkHttpMethod.fromValue(method.toUpperCase(Locale.ROOT)))
                .uri(URI.create("https://" + authority + uri));
        Instant date = null;
        for (Map.Entry<String, String> h : headers) {
            String name = h.getKey().toLowerCase(Locale.ROOT);
            if (name.equals("x-amz-date")) {
                try {
                    date = Instant.from(AMZ_DATE.parse(h.getValue().strip()));
                } catch (DateTimeParseException e) {
                    date = null;
                }
            }
            if (signed.signedHeaders().contains(name) && !SIGNER_SET.contains(name)) {
                request.appendHeader(h.getKey(), h.getValue());
            }
        }
        if (date == null) {
            date = Instant.now();
        }
        AwsCredentialsIdentity identity = pair.sessionToken() == null
                ? AwsCredentialsIdentity.create(pair.accessKeyId(), pair.secretAccessKey())
                : AwsSessionCredentialsIdentity.create(pair.accessKeyId(), pair.secretAccessKey(), pair.sessionToken());
        boolean s3 = signed.service().equals("s3");
        Clock clock = Clock.fixed(date, ZoneOffset.UTC);
        SignedRequest out = SIGNER.sign(r -> r.identity(identity)
                .request(request.build())
                .payload(ContentStreamProvider.fromByteArrayUnsafe(body))
                .putProperty(AwsV4HttpSigner.SERVICE_SIGNING_NAME, signed.service())
                .putProperty(AwsV4HttpSigner.REGION_NAME, signed.region())
                .putProperty(HttpSigner.SIGNING_CLOCK, clock)
                .putProperty(AwsV4HttpSigner.PAYLOAD_SIGNING_ENABLED, !unsignedPayload)
                .putProperty(AwsV4HttpSigner.DOUBLE_URL_ENCODE, !s3)
                .putProperty(AwsV4HttpSigner.NORMALIZE_PATH, !s3));
        Map<String, String> set = new LinkedHashMap<>();
        out.request().forEachHeader((name, values) -> {
            if (SIGNER_SET.contains(name.toLowerCase(Locale.ROOT)) && !values.isEmpty()) {
                set.put(name, values.get(0));
            }
        });
        return new Signature(set);
    }
}
