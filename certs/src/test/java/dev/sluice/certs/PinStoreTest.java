package dev.sluice.certs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PinStoreTest {

    static final String P1 = "sha256/npNGtuwyrwzZPA5EOdsoZumJEz1bWaH4MwJ50pBjLJc=";
    static final String P2 = "sha256/f3kov9WbjTcnhf7FuBMN/nR+qB0EZAbQUTVEg7Pj6Lw=";
    static final String P3 = "sha256/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

    @TempDir
    Path dir;

    @Test
    void recordsOnceAndReadsBack() throws Exception {
        Instant t = Instant.parse("2026-11-30T09:41:15.123Z");
        PinStore store = PinStore.open(dir, Clock.fixed(t, ZoneOffset.UTC));
        assertThat(store.pinsFor("api.anthropic.com")).isEmpty();

        assertThat(store.recordIfAbsent("api.anthropic.com", List.of(P1, P2))).containsExactly(P1, P2);
        assertThat(store.recordIfAbsent("api.anthropic.com", List.of(P3))).containsExactly(P1, P2);
        assertThat(store.pinsFor("api.anthropic.com")).contains(List.of(P1, P2));

        Path file = dir.resolve("pins").resolve("api.anthropic.com.json");
        assertThat(Files.readString(file)).isEqualTo("{\"host\":\"api.anthropic.com\",\"pins\":[\"" + P1 + "\",\""
                + P2 + "\"],\"recorded_at\":\"2026-11-30T09:41:15.123Z\"}\n");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-r--r--");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())))
                .isEqualTo("rwx------");
        assertThat(store.all()).containsExactly(Map.entry("api.anthropic.com",
                new PinRecord("api.anthropic.com", List.of(P1, P2), t)));
    }

    @Test
    void resetDeletesTheRecordSoTheNextOneWins() throws Exception {
        PinStore store = PinStore.open(dir);
        store.recordIfAbsent("a.example", List.of(P1));
        assertThat(store.reset("a.example")).isTrue();
        assertThat(store.reset("a.example")).isFalse();
        assertThat(store.pinsFor("a.example")).isEmpty();
        assertThat(store.recordIfAbsent("a.example", List.of(P2))).containsExactly(P2);
    }

    @Test
    void anotherStoreOnTheSameDirectorySeesChangesAtOnce() throws Exception {
        PinStore a = PinStore.open(dir);
        PinStore b = PinStore.open(dir);
        a.recordIfAbsent("x.example", List.of(P1));
        assertThat(b.pinsFor("x.example")).contains(List.of(P1));
        b.reset("x.example");
        assertThat(a.pinsFor("x.example")).isEmpty();
    }

    @Test
    void concurrentRecordersAgreeOnOneWinner() throws Exception {
        List<String> candidates = List.of(P1, P2, P3);
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            for (int round = 0; round < 20; round++) {
                String host = "race" + round + ".example";
                CyclicBarrier start = new CyclicBarrier(6);
                List<Future<List<String>>> results = new ArrayList<>();
                for (int i = 0; i < 6; i++) {
                    String pin = candidates.get(i % 3);
                    PinStore store = PinStore.open(dir);
                    Callable<List<String>> task = () -> {
                        start.await();
                        return store.recordIfAbsent(host, List.of(pin));
                    };
                    results.add(pool.submit(task));
                }
                List<String> winner = results.get(0).get();
                for (Future<List<String>> f : results) {
                    assertThat(f.get()).isEqualTo(winner);
                }
                assertThat(PinStore.open(dir).pinsFor(host)).contains(winner);
            }
        } finally {
            pool.shutdownNow();
        }
        try (Stream<Path> files = Files.list(dir.resolve("pins"))) {
            assertThat(files.map(p -> p.getFileName().toString())).allMatch(n -> n.endsWith(".example.json"));
        }
    }

    @Test
    void ipv6HostsGetAnEscapedFileNameAndRoundTrip() throws Exception {
        PinStore store = PinStore.open(dir);
        store.recordIfAbsent("2001:db8::1", List.of(P1));
        store.recordIfAbsent("192.0.2.1", List.of(P2));
        assertThat(dir.resolve("pins").resolve("2001%3Adb8%3A%3A1.json")).exists();
        assertThat(store.all().keySet()).containsExactly("192.0.2.1", "2001:db8::1");
        assertThat(store.pinsFor("2001:db8::1")).contains(List.of(P1));
    }

    @Test
    void temporaryFilesAreIgnoredAndNeverLeftBehind() throws Exception {
        PinStore store = PinStore.open(dir);
        Files.writeString(dir.resolve("pins").resolve(".crashed.example.json.123.tmp"), "{\"half");
        store.recordIfAbsent("ok.example", List.of(P1));
        assertThat(store.all()).containsOnlyKeys("ok.example");
        try (Stream<Path> files = Files.list(dir.resolve("pins"))) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder("ok.example.json", ".crashed.example.json.123.tmp");
        }
    }

    @Test
    void malformedRecordsFailLoudly() throws Exception {
        PinStore store = PinStore.open(dir);
        Path pins = dir.resolve("pins");
        Files.writeString(pins.resolve("bad.example.json"), "{\"host\":\"bad.example\",\"pins\":[\"nope\"],"
                + "\"recorded_at\":\"2026-11-30T09:41:15Z\"}");
        Files.writeString(pins.resolve("other.example.json"), "{\"host\":\"evil.example\",\"pins\":[\"" + P1
                + "\"],\"recorded_at\":\"2026-11-30T09:41:15Z\"}");
        Files.writeString(pins.resolve("trunc.example.json"), "{\"host\":\"trunc.example\",\"pi");

        assertThatThrownBy(() -> store.pinsFor("bad.example")).isInstanceOf(IOException.class)
                .hasMessageContaining("malformed pin record").hasMessageContaining("sluice pins reset bad.example");
        assertThatThrownBy(() -> store.pinsFor("other.example")).isInstanceOf(IOException.class)
                .hasMessageContaining("evil.example");
        assertThatThrownBy(() -> store.pinsFor("trunc.example")).isInstanceOf(IOException.class);
        assertThatThrownBy(store::all).isInstanceOf(IOException.class);
        assertThat(store.reset("bad.example")).isTrue();
    }

    @Test
    void allRejectsAFileThatIsNotACanonicalHost() throws Exception {
        PinStore store = PinStore.open(dir);
        Files.writeString(dir.resolve("pins").resolve("Upper.example.json"), "{}");
        assertThatThrownBy(store::all).isInstanceOf(IOException.class).hasMessageContaining("Upper.example.json");
    }

    @Test
    void rejectsBadHostsAndPins() throws Exception {
        PinStore store = PinStore.open(dir);
        assertThatThrownBy(() -> store.pinsFor("../ca.key")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.recordIfAbsent("Upper.example", List.of(P1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.recordIfAbsent("a.example", List.of()))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.recordIfAbsent("a.example", List.of("sha256/x")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(store.pinsFor("a.example")).isEqualTo(Optional.empty());
    }
}
