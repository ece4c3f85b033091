package dev.sluice.proxy.capture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.sluice.rules.policy.CaptureSettings;
import io.netty.buffer.Unpooled;
import dev.sluice.proxy.testing.ManualClock;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The capture store's files, retention, size cap and failures; a body's decoding and cut; SSE reassembly. */
class CaptureStoreTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dataDir;

    private static Capture capture(Clock clock, int n, String body) {
        Capture c = new Capture(String.format("%016x", n), clock.instant(), "agent", "api.llm.test", 443, "POST",
                "/v1/messages", "application/json", null, 1 << 20);
        c.request().feed(Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        c.request().finish();
        return c;
    }

    @Test
    void oldCapturesAndThoseOverTheCapAreRemovedOldestFirst() throws Exception {
        ManualClock clock = new ManualClock(Instant.parse("2026-12-01T10:00:00Z"));
        CaptureSettings settings = new CaptureSettings(List.of("api.llm.test"), 1.0, 1 << 20, Duration.ofHours(1),
                3000);
        CaptureStore store = CaptureStore.start(dataDir, clock);
        try {
            store.submit(capture(clock, 1, "a".repeat(1000)), settings);
            await().until(() -> store.written() == 1);
            clock.advance(Duration.ofMinutes(61));
            store.submit(capture(clock, 2, "b".repeat(1000)), settings);
            await().until(() -> store.written() == 2);
            Path dir = CaptureStore.directory(dataDir);
            await().until(() -> !Files.exists(dir.resolve("0000000000000001.json")));
            assertThat(dir.resolve("0000000000000002.json")).exists();
            // the cap: three captures of about 1.3 KB each do not fit in 3000 bytes; the oldest goes
            store.submit(capture(clock, 3, "c".repeat(1000)), settings);
            store.submit(capture(clock, 4, "d".repeat(1000)), settings);
            await().until(() -> store.written() == 4);
            await().until(() -> !Files.exists(dir.resolve("0000000000000002.json")));
            assertThat(dir.resolve("0000000000000003.json")).exists();
            assertThat(dir.resolve("0000000000000004.json")).exists();
            // a capture is queued once
            Capture again = capture(clock, 5, "e");
            store.submit(again, settings);
            store.submit(again, settings);
            await().until(() -> store.written() == 5);
            assertThat(store.written()).isEqualTo(5);
        } finally {
            store.close();
        }
    }

    @Test
    void capturesLeftByAnEarlierRunArePrunedAtStart() throws Exception {
        ManualClock clock = new ManualClock(Instant.parse("2026-12-01T10:00:00Z"));
        CaptureSettings settings = new CaptureSettings(List.of("api.llm.test"), 1.0, 1 << 20, Duration.ofHours(1),
                1 << 20);
        CaptureStore first = CaptureStore.start(dataDir, clock);
        first.submit(capture(clock, 1, "old"), settings);
        await().until(() -> first.written() == 1);
        first.close();
        Path old = CaptureStore.file(dataDir, "0000000000000001");
        Files.setLastModifiedTime(old, java.nio.file.attribute.FileTime.from(clock.instant().minus(Duration.ofHours(2))));
        CaptureStore second = CaptureStore.start(dataDir, clock);
        try {
            second.retain(settings);
            await().until(() -> !Files.exists(old));
        } finally {
            second.close();
        }
    }

    @Test
    void aWriteThatFailsIsCountedAndTheNextOneStillWorks() throws Exception {
        Clock clock = Clock.systemUTC();
        CaptureSettings settings = new CaptureSettings(List.of("api.llm.test"), 1.0, 1 << 20, Duration.ofHours(1),
                1 << 20);
        Path blocker = Files.writeString(CaptureStore.directory(dataDir), "not a directory");
        CaptureStore store = CaptureStore.start(dataDir, clock);
        try {
            store.submit(capture(clock, 1, "x"), settings);
            await().until(() -> store.failed() == 1);
            Files.delete(blocker);
            store.submit(capture(clock, 2, "y"), settings);
            await().until(() -> store.written() == 1);
            assertThat(CaptureStore.file(dataDir, "0000000000000002")).exists();
        } finally {
            store.close();
        }
    }

    @Test
    void aGzipBodyIsDecodedAndCutAtItsLimit() throws Exception {
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(gz)) {
            out.write("hello, decoded world".getBytes(StandardCharsets.UTF_8));
        }
        byte[] bytes = gz.toByteArray();
        CapturedBody whole = new CapturedBody("gzip", 1024);
        whole.feed(bytes, 0, 7);
        whole.feed(bytes, 7, bytes.length - 7);
        whole.finish();
        assertThat(new String(whole.bytes(), StandardCharsets.UTF_8)).isEqualTo("hello, decoded world");
        assertThat(whole.truncated()).isFalse();

        CapturedBody cut = new CapturedBody("gzip", 5);
        cut.feed(bytes, 0, bytes.length);
        cut.finish();
        assertThat(new String(cut.bytes(), StandardCharsets.UTF_8)).isEqualTo("hello");
        assertThat(cut.truncated()).isTrue();

        CapturedBody odd = new CapturedBody("br", 1024);
        odd.feed(new byte[] {1, 2, 3}, 0, 3);
        odd.finish();
        assertThat(odd.bytes()).containsExactly(1, 2, 3);
        assertThat(odd.note()).contains("br");
    }

    @Test
    void aCutInsideAMultiByteCharacterStaysText() throws Exception {
        Capture c = new Capture("00000000000000aa", Instant.EPOCH, "agent", "h.example", 443, "POST", "/", "text/plain",
                null, 4);
        c.request().feed(Unpooled.copiedBuffer("abcé", StandardCharsets.UTF_8)); // é is 2 bytes: cut after 'c' + 1
        c.request().finish();
        JsonNode json = JSON.readTree(c.toJson());
        assertThat(json.path("request").path("body").asText()).isEqualTo("abc");
        assertThat(json.path("request").path("truncated").asBoolean()).isTrue();
        assertThat(json.has("response")).isFalse();
    }

    @Test
    void anEventStreamIsSplitIntoEventsAndItsGeneratedText() throws Exception {
        String stream = ": comment\r\nevent: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\r\n\r\n"
                + "data: {\"choices\":[{\"delta\":{\"content\":\"lo \"}}]}\n\n"
                + "data: {\"type\":\"response.output_text.delta\",\"delta\":\"wor\"}\n\n"
                + "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ld\"}]}}]}\n"
                + "data: second line\n\n"
                + "event: ping\n\n"
                + "data: [DONE]";
        List<ServerSentEvents.Event> events = ServerSentEvents.parse(stream);
        assertThat(events).extracting(ServerSentEvents.Event::event)
                .containsExactly("content_block_delta", null, null, null, null);
        assertThat(events.get(3).data()).endsWith("\nsecond line");
        assertThat(events.get(4).data()).isEqualTo("[DONE]");
        assertThat(ServerSentEvents.text(events)).isEqualTo("Hello world");
        assertThat(ServerSentEvents.text(ServerSentEvents.parse(
                "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ld\"}]}}]}\n\n"))).isEqualTo("ld");
    }
}
