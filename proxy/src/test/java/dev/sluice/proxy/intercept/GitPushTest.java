package dev.sluice.proxy.intercept;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sluice.proxy.testing.Curl;
import dev.sluice.proxy.testing.GitHttpOrigin;
import dev.sluice.proxy.testing.SluiceFixture;
import dev.sluice.proxy.testing.TestTls;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real {@code git push} over HTTPS through Sluice's interception of the git host, to a loopback
 * {@code git http-backend} ({@link GitHttpOrigin}). git sends a receive-pack request that fits its
 * {@code http.postBuffer} (1 MiB) as one body with a {@code Content-Length}, of type
 * {@code application/x-git-receive-pack-request}: a binary body that Sluice must never rewrite.
 */
class GitPushTest {

    private static final String HOST = "git.llm.test";
    private static final String ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    @TempDir
    Path dir;
    private GitHttpOrigin origin;
    private SluiceFixture sluice;
    private Path home;

    @AfterEach
    void stop() throws IOException {
        if (sluice != null) {
            sluice.close();
        }
        if (origin != null) {
            origin.close();
        }
    }

    private void start(boolean lengthRequired, String redaction) throws Exception {
        TestTls tls = TestTls.create(dir.resolve("origin-tls"), HOST);
        Path root = Files.createDirectories(dir.resolve("repos"));
        home = Files.createDirectories(dir.resolve("home"));
        git(root, "init", "-q", "--bare", "-b", "main", "remote.git");
        git(root.resolve("remote.git"), "config", "http.receivepack", "true");
        origin = new GitHttpOrigin(root, tls, lengthRequired);
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
                redaction:
                  %4$s
                listen:
                  proxy: 127.0.0.1:0
                """.formatted(HOST, origin.port(), tls.caPem().toAbsolutePath(), redaction));
    }

    /** A work tree with one commit of {@code content}, written with zlib level 0 so it shows in the pack. */
    private Path workTree(String content) throws Exception {
        Path work = Files.createDirectories(dir.resolve("work"));
        git(work, "init", "-q", "-b", "main");
        git(work, "config", "core.compression", "0");
        git(work, "config", "pack.compression", "0");
        Files.writeString(work.resolve("notes.txt"), content, StandardCharsets.UTF_8);
        git(work, "add", "notes.txt");
        git(work, "-c", "user.name=Tester", "-c", "user.email=tester@example.org", "commit", "-q", "-m", "notes");
        return work;
    }

    private static String text(Random random, int bytes) {
        StringBuilder b = new StringBuilder();
        while (b.length() < bytes) {
            b.append("line ").append(random.nextInt(1_000_000)).append(" of some project notes\n");
        }
        return b.toString();
    }

    private static String anthropicKey(Random random) {
        StringBuilder b = new StringBuilder("sk-ant-").append("api03-");
        String urlsafe = ALNUM + "_-";
        for (int i = 0; i < 93; i++) {
            b.append(urlsafe.charAt(random.nextInt(urlsafe.length())));
        }
        return b.append("AA").toString();
    }

    private record Run(int exit, String output) {
    }

    private Run push(Path work) throws Exception {
        String proxy = "http://127.0.0.1:" + sluice.port();
        return run(work, List.of("git", "-c", "http.proxy=" + proxy,
                "-c", "http.sslCAInfo=" + sluice.dataDir().resolve("ca.crt.pem"),
                "push", "https://" + HOST + ":" + origin.port() + "/remote.git", "main:main"), proxy);
    }

    private String git(Path cwd, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("git"));
        command.addAll(List.of(args));
        Run run = run(cwd, command, null);
        assertThat(run.exit()).as("git %s: %s", String.join(" ", args), run.output()).isZero();
        return run.output().strip();
    }

    private Run run(Path cwd, List<String> command, String proxy) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(cwd.toFile()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        for (String name : Curl.PROXY_VARIABLES) {
            env.remove(name);
        }
        env.remove("no_proxy");
        env.remove("NO_PROXY");
        if (proxy != null) {
            // Both cases, so that nothing could go straight out.
            for (String name : List.of("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")) {
                env.put(name, proxy);
            }
        }
        env.put("HOME", (home == null ? dir : home).toString());
        env.put("GIT_CONFIG_NOSYSTEM", "1");
        env.put("GIT_TERMINAL_PROMPT", "0");
        for (String name : List.of("GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR")) {
            env.remove(name);
        }
        if (sluice != null) {
            env.put("GIT_SSL_CAINFO", sluice.dataDir().resolve("ca.crt.pem").toString());
        }
        Process process = pb.start();
        byte[] output = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Run(process.exitValue(), new String(output, StandardCharsets.UTF_8));
    }

    private String remoteMain() throws Exception {
        Run run = run(dir.resolve("repos/remote.git"), List.of("git", "rev-parse", "--verify", "-q", "refs/heads/main"), null);
        return run.exit() == 0 ? run.output().strip() : null;
    }

    private JsonNode receivePackRecord() {
        return await().atMost(Duration.ofSeconds(10)).until(() -> sluice.audit().stream()
                .filter(r -> r.path("url.path").asText().endsWith("/git-receive-pack")).findFirst().orElse(null),
                r -> r != null);
    }

    @Test
    void aPushReachesAnOriginThatRequiresContentLengthAndTheRepositoryIsIntact() throws Exception {
        start(true, "action: redact");
        Path work = workTree(text(new Random(1), 20_000));
        Run push = push(work);
        assertThat(push.exit()).as(push.output()).isZero();
        assertThat(remoteMain()).isEqualTo(git(work, "rev-parse", "HEAD"));
        git(dir.resolve("repos/remote.git"), "fsck", "--strict");
        GitHttpOrigin.Seen post = origin.requests().stream().filter(r -> r.path().endsWith("/git-receive-pack"))
                .findFirst().orElseThrow();
        assertThat(post.transferEncoding()).isNull();
        assertThat(post.contentLength()).isNotNull();
    }

    @Test
    void aPushCarryingAKeyIsRefusedWith403AndTheRemoteIsUntouched() throws Exception {
        start(false, "action: redact");
        Random random = new Random(2);
        Path work = workTree(text(random, 4_000) + "ANTHROPIC_API_KEY=" + anthropicKey(random) + "\n");
        Run push = push(work);
        assertThat(push.exit()).as(push.output()).isNotZero();
        assertThat(push.output()).contains("403");
        assertThat(remoteMain()).isNull();
        JsonNode record = receivePackRecord();
        assertThat(record.path("reason").asText()).isEqualTo("credential_detected");
        assertThat(record.path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
        assertThat(origin.requests()).noneMatch(r -> r.path().endsWith("/git-receive-pack"));
    }

    @Test
    void inBinaryReportModeAPushCarryingAKeyArrivesIntactAndTheFindingIsRecorded() throws Exception {
        start(false, "action: redact\n  binary: report");
        Random random = new Random(3);
        Path work = workTree(text(random, 4_000) + "ANTHROPIC_API_KEY=" + anthropicKey(random) + "\n");
        Run push = push(work);
        assertThat(push.exit()).as(push.output()).isZero();
        assertThat(push.output()).doesNotContain("unpack").doesNotContain("error");
        assertThat(remoteMain()).isEqualTo(git(work, "rev-parse", "HEAD"));
        git(dir.resolve("repos/remote.git"), "fsck", "--strict");
        assertThat(receivePackRecord().path("redactions").path("anthropic-api-key").asLong()).isEqualTo(1);
    }
}
