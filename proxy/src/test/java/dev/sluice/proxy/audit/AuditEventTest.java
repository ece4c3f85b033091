package dev.sluice.proxy.audit;

import dev.sluice.rules.decision.BuiltinRules;
import dev.sluice.certs.PinResult;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.rules.address.AddressClass;
import dev.sluice.rules.decision.Decision;
import dev.sluice.rules.decision.Reason;
import dev.sluice.rules.decision.Verdict;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AuditEventTest {

    private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-11-30T09:31:02.123Z"), ZoneOffset.UTC);

    private final List<AuditRecord> records = new CopyOnWriteArrayList<>();
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

    private AuditEvent newEvent() {
        return new AuditEvent(records::add, CLOCK, nanos::get);
    }

    @Test
    void emitsOnceOnly() {
        AuditEvent event = newEvent().extension("github");
        assertThat(event.emit()).isTrue();
        assertThat(event.emit()).isFalse();
        assertThat(event.isEmitted()).isTrue();
        assertThat(records).hasSize(1);
    }

    @Test
    void emitTwiceWritesOneLineToTheLog(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("audit.jsonl");
        AuditLog log = AuditLog.open(file);
        AuditEvent event = new AuditEvent(log, CLOCK);
        assertThat(event.emit()).isTrue();
        assertThat(event.emit()).isFalse();
        log.close();
        assertThat(Files.readAllLines(file)).hasSize(1);
    }

    @Test
    void onlyOneOfManyRacingEmitsWins() throws Exception {
        for (int round = 0; round < 200; round++) {
            records.clear();
            AuditEvent event = newEvent();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            for (int i = 0; i < 4; i++) {
                pool.execute(event::emit);
            }
            pool.shutdown();
            assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
            assertThat(records).hasSize(1);
        }
    }

    @Test
    void carriesEveryValueIntoTheRecord() throws Exception {
        AuditEvent event = newEvent()
                .extension("github")
                .client(new InetSocketAddress(InetAddress.getByName("10.0.0.2"), 50123))
                .listener(Listener.EXPLICIT)
                .method("GET")
                .scheme("https")
                .server("api.github.com", 443)
                .urlPath("/repos?page=2")
                .tlsMode(TlsMode.INTERCEPT)
                .tlsSni("api.github.com")
                .decision(Decision.allow("extensions.github.allow[0]"))
                .peerAddress("140.82.112.6")
                .statusCode(200)
                .pin(PinResult.OK)
                .addRedactions("openai-key", 2)
                .addRedactions("openai-key", 1)
                .addBytesSent(100)
                .addBytesSent(28)
                .addBytesReceived(4096);
        nanos.addAndGet(37_900_000L);
        event.emit();

        AuditRecord r = records.get(0);
        assertThat(r.time()).isEqualTo(CLOCK.instant());
        assertThat(r.eventId()).isEqualTo(event.eventId()).matches("[0-9a-f]{16}");
        assertThat(r.clientAddress()).isEqualTo("10.0.0.2");
        assertThat(r.clientPort()).isEqualTo(50123);
        assertThat(r.serverAddress()).isEqualTo("api.github.com");
        assertThat(r.serverPort()).isEqualTo(443);
        assertThat(r.urlPath()).isEqualTo("/repos?page=***");
        assertThat(r.bytesSent()).isEqualTo(128);
        assertThat(r.bytesReceived()).isEqualTo(4096);
        assertThat(r.durationMs()).isEqualTo(37);
        assertThat(r.redactions()).containsEntry("openai-key", 3L);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.pin()).isEqualTo("ok");
        assertThat(r.error()).isNull();
    }

    @Test
    void unsetNumbersStayNull() {
        newEvent().emit();
        AuditRecord r = records.get(0);
        assertThat(r.clientPort()).isNull();
        assertThat(r.serverPort()).isNull();
        assertThat(r.statusCode()).isNull();
        assertThat(r.redactions()).isNull();
        assertThat(r.toJson()).doesNotContain("client.port", "server.port", "status_code", "redactions");
    }

    @Test
    void takesDecisionReasonAndRuleFromARulesDecision() {
        newEvent().decision(new Decision(Verdict.DENY, Reason.ADDRESS_CLASS, "network.address_class",
                AddressClass.METADATA)).emit();
        AuditRecord r = records.get(0);
        assertThat(r.decision()).isEqualTo("deny");
        assertThat(r.reason()).as("one word, as the metrics label and every listener spell it")
                .isEqualTo("address_class");
        assertThat(r.addressClass()).isEqualTo("metadata");
        assertThat(r.rule()).isEqualTo("network.address_class");
    }

    @Test
    void writesIpv6ClientWithoutBrackets() throws Exception {
        newEvent().client(new InetSocketAddress(InetAddress.getByName("::1"), 4000)).emit();
        assertThat(records.get(0).clientAddress()).isEqualTo("0:0:0:0:0:0:0:1");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "/a?x=1&token=abc            | /a?x=***&token=***",
        "/a?flag&x=1                 | /a?flag&x=***",
        "/a?x=                       | /a?x=***",
        "/a?x=a=b                    | /a?x=***",
        "/a                          | /a",
        "/a?                         | /a?",
        "/a?x=1#frag=secret          | /a?x=***",
        "/p/q#top                    | /p/q",
        "http://u:pw@h.test/p?k=v    | /p?k=***",
        "http://h.test?k=v           | /?k=***",
        "https://h.test              | /",
        "*                           | *",
        "git+ssh://u:pw@h.test/r?k=v | /r?k=***",
        "h.test:443                  | h.test:443",
        "1http://h.test/p            | 1http://h.test/p",
    })
    void masksQueryValues(String target, String expected) {
        assertThat(AuditEvent.maskQuery(target)).isEqualTo(expected);
    }

    @Test
    void aMaskedValueNeverReachesTheRecord() {
        String secret = "sk-live-0123456789SECRET";
        newEvent().urlPath("/v1/items?api_key=" + secret + "&q=" + secret + "#" + secret).emit();
        String json = records.get(0).toJson();
        assertThat(json).doesNotContain(secret).contains("\"url.path\":\"/v1/items?api_key=***&q=***\"");
    }

    @Test
    void capsVeryLongPaths() {
        String path = "/" + "a".repeat(10_000);
        assertThat(AuditEvent.maskQuery(path)).hasSize(AuditEvent.MAX_PATH_CHARS);
    }

    @Test
    void errorIsOneShortLine() {
        newEvent().error("  java.io.IOException: boom\n\tat a.b.C.d(C.java:1)\n\tat e.f.G.h(G.java:2)  ").emit();
        assertThat(records.get(0).error()).isEqualTo("java.io.IOException: boom");

        records.clear();
        newEvent().error("x".repeat(500) + "\ty").emit();
        assertThat(records.get(0).error()).hasSize(AuditEvent.MAX_ERROR_CHARS);

        records.clear();
        newEvent().error(new IOException("connection reset\nmore")).emit();
        assertThat(records.get(0).error()).isEqualTo("IOException: connection reset");
    }

    @Test
    void anUpstreamFailureKeepsThePolicysDecisionAndSaysItsOutcome() {
        newEvent().decision(Decision.allow("extensions.github.allow[0]"))
                .decision(Decision.deny(Reason.UPSTREAM_CONNECT_FAILED, BuiltinRules.CONNECT)).emit();
        newEvent().decision(new Decision(Verdict.WOULD_DENY, Reason.NOT_ALLOWLISTED, BuiltinRules.IMPLICIT_DENY, null))
                .decision(Decision.deny(Reason.UPSTREAM_TIMEOUT, BuiltinRules.CONNECT)).emit();
        newEvent().decision(Decision.allow("extensions.github.allow[0]"))
                .decision(Decision.deny(Reason.PIN_MISMATCH, BuiltinRules.PINS)).emit();

        assertThat(records.get(0).toJson()).contains("\"decision\":\"allow\",\"outcome\":\"upstream_failure\","
                + "\"reason\":\"upstream_connect_failed\",\"rule\":\"network.connect\"");
        assertThat(records.get(1).decision()).isEqualTo("would_deny");
        assertThat(records.get(1).outcome()).isEqualTo("upstream_failure");
        assertThat(records.get(1).reason()).isEqualTo("upstream_timeout");
        // A pin mismatch is the policy's pins refusing the origin's certificate: a denial.
        assertThat(records.get(2).decision()).isEqualTo("deny");
        assertThat(records.get(2).outcome()).isNull();
    }

    @Test
    void rejectsValuesOutOfRange() {
        AuditEvent event = newEvent();
        assertThatThrownBy(() -> event.server("h", 70000)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> event.addBytesSent(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void countsBytesFromManyThreads() throws Exception {
        AuditEvent event = newEvent();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        for (int t = 0; t < 4; t++) {
            pool.execute(() -> {
                for (int i = 0; i < 10_000; i++) {
                    event.addBytesSent(1);
                    event.addBytesReceived(2);
                }
            });
        }
        pool.shutdown();
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        event.emit();
        assertThat(records.get(0).bytesSent()).isEqualTo(40_000);
        assertThat(records.get(0).bytesReceived()).isEqualTo(80_000);
    }

    @Test
    void aCredentialInAPathSegmentOrABareQueryNeverReachesTheRecord() {
        String token = "ghp_" + "1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU";
        assertThat(AuditEvent.maskTarget("/ok/" + token)).isEqualTo("/ok/%5BREDACTED%3Agithub-pat%5D");
        assertThat(AuditEvent.maskTarget("http://api.test:8080/a?" + token + "&x=1"))
                .isEqualTo("/a?%5BREDACTED%3Agithub-pat%5D&x=***");
        assertThat(AuditEvent.maskTarget("/v1/chat/completions")).isEqualTo("/v1/chat/completions");
        newEvent().urlPath("/repos/" + token + "/git").emit();
        assertThat(records.get(0).toJson()).doesNotContain(token)
                .contains("\"url.path\":\"/repos/%5BREDACTED%3Agithub-pat%5D/git\"");
    }

    @Test
    void eventIdHexIsTheFormattedLongZeroPadded() {
        for (long v : new long[] {0L, 1L, 0xabcdefL, -1L, Long.MIN_VALUE, Long.MAX_VALUE, 0x0123456789abcdefL}) {
            assertThat(AuditEvent.hex16(v)).isEqualTo(String.format("%016x", v));
        }
    }
}
