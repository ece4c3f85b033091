package dev.sluice.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.proxy.cli.SluiceCli;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.Curl.CurlResult;
import dev.sluice.proxy.testing.RecordingOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Approvals with {@code backend: admin}: curl's request is held by Sluice, a person answers with the
 * {@code sluice approvals} CLI through the admin listener (bearer token from the data dir), and curl sees
 * the answer. Each scope, a denial, a timeout, a scope the policy does not offer, and the token check.
 */
class AdminApprovalsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private RecordingOrigin origin;
    private SluiceFixture sluice;

    @TempDir
    Path work;

    @BeforeEach
    void start() throws Exception {
        origin = new RecordingOrigin();
        Path overlay = work.resolve("approved.yaml");
        Files.writeString(overlay, "");
        sluice = SluiceFixture.start("""
                version: 1
                extensions:
                  default: {}
                include: ["%s"]
                approvals:
                  backend: admin
                  timeout: %s
                  scopes: [once, session, always]
                  overlay: "%s"
                network:
                  allow_private: ["127.0.0.1/32"]
                  hosts:
                    held.test: 127.0.0.1
                    other.test: 127.0.0.1
                listen:
                  proxy: 127.0.0.1:0
                  admin: 127.0.0.1:0
                """.formatted(overlay, "20s", overlay));
    }

    @AfterEach
    void stop() throws Exception {
        sluice.close();
        origin.close();
    }

    private CompletableFuture<CurlResult> getLater(String host, String path) {
        return CompletableFuture.supplyAsync(() -> Curl.run(List.of("-x", sluice.proxyUrl(),
                "http://" + host + ":" + origin.port() + path)));
    }

    private record Cli(int code, String out, String err) {
    }

    private Cli cli(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--data-dir", sluice.dataDir().toString(),
                "--admin", "127.0.0.1:" + sluice.server().adminAddress().getPort()));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(out), new PrintWriter(err), all.toArray(String[]::new));
        return new Cli(code, out.toString(), err.toString());
    }

    /** Waits until the CLI lists a held request for {@code path}; returns its id. */
    private String heldId(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> {
            Cli list = cli("approvals", "list", "--format", "json");
            assertThat(list.code()).as(list.err()).isZero();
            for (JsonNode q : JSON.readTree(list.out())) {
                if (path.equals(q.path("path").asText())) {
                    return q.path("id").asText();
                }
            }
            return null;
        }, id -> id != null);
    }

    private JsonNode record(String path) {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> path.equals(r.path("url.path").asText())).reduce((a, b) -> b).orElse(null), r -> r != null);
    }

    @Test
    void aPersonAllowsOnceWithTheCliAndCurlGetsTheOriginsAnswer() throws Exception {
        CompletableFuture<CurlResult> held = getLater("held.test", "/first");
        String id = heldId("/first");
        Cli table = cli("approvals", "list");
        assertThat(table.out()).contains(id, "default", "held.test:" + origin.port() + "/first", "GET",
                "always,once,session");
        assertThat(held).isNotDone();

        Cli allow = cli("approvals", "allow", id, "--scope", "once", "--by", "carol");
        assertThat(allow.code()).as(allow.err()).isZero();
        assertThat(allow.out()).isEqualTo("allowed " + id + " (scope once)\n");
        assertThat(held.get().httpStatus()).isEqualTo(200);
        assertThat(origin.requests()).extracting(r -> r.uri()).contains("/first");
        JsonNode r = record("/first");
        assertThat(r.get("approval").asText()).isEqualTo("granted");
        assertThat(r.get("approval.by").asText()).isEqualTo("carol");
        assertThat(r.get("approval.scope").asText()).isEqualTo("once");
        assertThat(r.get("event.id").asText()).isEqualTo(id);

        // Answered: nothing waits under that id any more, and the CLI says so.
        Cli again = cli("approvals", "allow", id);
        assertThat(again.code()).isEqualTo(1);
        assertThat(again.err()).contains("no request waits under " + id);
        assertThat(cli("approvals", "list").out()).isEqualTo("no requests are held\n");
    }

    @Test
    void aDenialRefusesWithTheReasonOfTheMissAndNothingReachesTheOrigin() throws Exception {
        CompletableFuture<CurlResult> held = getLater("held.test", "/no");
        String id = heldId("/no");
        Cli deny = cli("approvals", "deny", id, "--by", "dave");
        assertThat(deny.code()).as(deny.err()).isZero();
        CurlResult r = held.get();
        assertThat(r.httpStatus()).isEqualTo(403);
        assertThat(r.body()).isEqualTo("sluice: not_allowlisted\n");
        JsonNode rec = record("/no");
        assertThat(rec.get("approval").asText()).isEqualTo("denied");
        assertThat(rec.get("approval.by").asText()).isEqualTo("dave");
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain("/no");
    }

    @Test
    void sessionAndAlwaysGrantLaterRequestsWithoutAsking() throws Exception {
        CompletableFuture<CurlResult> first = getLater("held.test", "/s1");
        cli("approvals", "allow", heldId("/s1"), "--scope", "session");
        assertThat(first.get().httpStatus()).isEqualTo(200);
        assertThat(getLater("held.test", "/s2").get().httpStatus()).isEqualTo(200);
        assertThat(record("/s2").get("approval.by").asText()).isEqualTo("session");

        CompletableFuture<CurlResult> other = getLater("other.test", "/pkg");
        assertThat(cli("approvals", "allow", heldId("/pkg"), "--scope", "always").code()).isZero();
        assertThat(other.get().httpStatus()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> sluice.reloader().reloadsOk() >= 1);
        assertThat(Files.readString(work.resolve("approved.yaml"))).contains("\"other.test\"", "\"/pkg\"");
    }

    @Test
    void aScopeThePolicyDoesNotOfferIsAUsageErrorAndTheRequestKeepsWaiting() throws Exception {
        CompletableFuture<CurlResult> held = getLater("held.test", "/scope");
        String id = heldId("/scope");
        Cli bad = cli("approvals", "allow", id, "--scope", "forever");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("--scope: forever (expected: once, session or always)");
        assertThat(held).isNotDone();
        assertThat(cli("approvals", "deny", id).code()).isZero();
        assertThat(held.get().httpStatus()).isEqualTo(403);
    }

    @Test
    void theApprovalEndpointsNeedTheTokenFromTheDataDir() throws Exception {
        Path tokenFile = sluice.dataDir().resolve("admin.token");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(tokenFile))).isEqualTo("rw-------");
        String token = Files.readString(tokenFile).trim();
        assertThat(token).matches("[A-Za-z0-9_-]{43}");
        HttpClient client = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();
        URI uri = URI.create("http://127.0.0.1:" + sluice.server().adminAddress().getPort() + "/approvals");
        HttpResponse<String> none = client.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"sluice-admin\"");
        HttpResponse<String> wrong = client.send(HttpRequest.newBuilder(uri)
                .header("Authorization", "Bearer " + token.substring(1) + "x").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(wrong.statusCode()).isEqualTo(401);
        HttpResponse<String> forged = client.send(HttpRequest.newBuilder(uri.resolve("/approvals/0123456789abcdef/allow"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(forged.statusCode()).isEqualTo(401);
        HttpResponse<String> ok = client.send(HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + token)
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(ok.body()).get("approvals").isArray()).isTrue();

        // A CLI without the data dir's token cannot answer.
        StringWriter err = new StringWriter();
        int code = SluiceCli.execute(new PrintWriter(new StringWriter()), new PrintWriter(err), "approvals", "list",
                "--data-dir", work.resolve("elsewhere").toString(),
                "--admin", "127.0.0.1:" + sluice.server().adminAddress().getPort());
        assertThat(code).isEqualTo(1);
        assertThat(err.toString()).contains("no admin token in");
    }

    @Test
    void noAnswerWithinTheTimeoutDenies() throws Exception {
        sluice.writePolicy(Files.readString(sluice.dataDir().resolve("policy.yaml")).replace("timeout: 20s",
                "timeout: 1s"));
        sluice.reloader().reload();
        assertThat(sluice.reloader().reloadsOk()).isEqualTo(1);
        CompletableFuture<CurlResult> held = getLater("held.test", "/late");
        String id = heldId("/late");
        CurlResult r = held.get();
        assertThat(r.httpStatus()).isEqualTo(403);
        JsonNode rec = record("/late");
        assertThat(rec.get("approval").asText()).isEqualTo("timeout");
        assertThat(rec.get("error").asText()).contains("no answer through the admin listener within 1000 ms");
        Cli late = cli("approvals", "allow", id);
        assertThat(late.code()).isEqualTo(1);
        assertThat(origin.requests()).extracting(x -> x.uri()).doesNotContain("/late");
    }
}
