package dev.sluice.rules.redact;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.rules.redact.BodyDecoding.Coding;
import dev.sluice.rules.redact.BodyDecoding.MalformedBodyException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class BodyDecodingTest {

    static byte[] gzip(byte[] data) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(out)) {
            g.write(data);
        }
        return out.toByteArray();
    }

    static byte[] deflate(byte[] data, boolean raw) {
        Deflater d = new Deflater(Deflater.DEFAULT_COMPRESSION, raw);
        d.setInput(data);
        d.finish();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        while (!d.finished()) {
            out.write(buf, 0, d.deflate(buf));
        }
        d.end();
        return out.toByteArray();
    }

    static byte[] text(int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; b.length() < n; i++) {
            b.append("line ").append(i).append(" of the prompt\n");
        }
        return b.substring(0, n).getBytes(StandardCharsets.US_ASCII);
    }

    /** Decodes in chunks of {@code chunk} bytes. */
    static byte[] decode(Coding coding, byte[] body, int chunk, long cap) throws Exception {
        BodyDecoding.Decoder d = BodyDecoding.decoder(coding, cap);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int off = 0; off < body.length; off += chunk) {
            d.feed(body, off, Math.min(chunk, body.length - off), out::write);
        }
        d.finish(out::write);
        return out.toByteArray();
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 10, 100, 4096, 1 << 20})
    void gzipAndDeflateInAnyChunking(int chunk) throws Exception {
        byte[] data = text(300_000);
        assertThat(decode(Coding.GZIP, gzip(data), chunk, 1 << 20)).isEqualTo(data);
        assertThat(decode(Coding.DEFLATE, deflate(data, false), chunk, 1 << 20)).isEqualTo(data);
        assertThat(decode(Coding.DEFLATE, deflate(data, true), chunk, 1 << 20)).isEqualTo(data);
        byte[] two = concat(gzip(Arrays.copyOf(data, 1000)), gzip(Arrays.copyOfRange(data, 1000, 5000)));
        assertThat(decode(Coding.GZIP, two, chunk, 1 << 20)).isEqualTo(Arrays.copyOf(data, 5000));
    }

    @Test
    void gzipHeaderWithOptionalFields() throws Exception {
        byte[] data = text(5000);
        byte[] plain = gzip(data);
        // rebuild the header with FEXTRA, FNAME, FCOMMENT
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(new byte[] {0x1f, (byte) 0x8b, 8, 4 | 8 | 16, 0, 0, 0, 0, 0, 3});
        b.write(new byte[] {3, 0, 'a', 'b', 'c'});
        b.writeBytes("name.txt\0".getBytes(StandardCharsets.US_ASCII));
        b.writeBytes("a comment\0".getBytes(StandardCharsets.US_ASCII));
        b.write(plain, 10, plain.length - 10);
        assertThat(decode(Coding.GZIP, b.toByteArray(), 1, 1 << 20)).isEqualTo(data);
        assertThat(decode(Coding.GZIP, b.toByteArray(), 7, 1 << 20)).isEqualTo(data);
    }

    @Test
    void decompressionBombStopsAtTheCap() throws Exception {
        byte[] bomb = gzip(new byte[10 << 20]);
        assertThat(bomb.length).isLessThan(20_000);
        long[] seen = {0};
        BodyDecoding.Decoder d = BodyDecoding.decoder(Coding.GZIP, 1 << 20);
        assertThatThrownBy(() -> d.feed(bomb, 0, bomb.length, (b, off, len) -> seen[0] += len))
                .isInstanceOfSatisfying(BodyTooLargeException.class, e -> {
                    assertThat(e.limitBytes()).isEqualTo(1 << 20);
                });
        assertThat(seen[0]).isLessThanOrEqualTo(1 << 20);
        assertThatThrownBy(() -> BodyDecoding.decodeAll("deflate", deflate(new byte[10 << 20], false), 1 << 20))
                .isInstanceOf(BodyTooLargeException.class);
    }

    @Test
    void identityPassesThroughWithTheCap() throws Exception {
        byte[] data = text(1000);
        assertThat(BodyDecoding.decodeAll(null, data, 1000)).isEqualTo(data);
        assertThat(BodyDecoding.decodeAll("identity", data, 1000)).isEqualTo(data);
        assertThatThrownBy(() -> BodyDecoding.decodeAll("", data, 999)).isInstanceOf(BodyTooLargeException.class);
    }

    @Test
    void parseCodings() throws Exception {
        assertThat(BodyDecoding.parse(null)).isEqualTo(Coding.IDENTITY);
        assertThat(BodyDecoding.parse("GZip")).isEqualTo(Coding.GZIP);
        assertThat(BodyDecoding.parse("x-gzip")).isEqualTo(Coding.GZIP);
        assertThat(BodyDecoding.parse(" deflate ")).isEqualTo(Coding.DEFLATE);
        assertThat(BodyDecoding.parse("identity, gzip")).isEqualTo(Coding.GZIP);
        for (String bad : new String[] {"br", "zstd", "compress", "x-compress", "x-foo", "gzip, gzip", "deflate, gzip", "gzip, br"}) {
            assertThatThrownBy(() -> BodyDecoding.parse(bad)).as(bad)
                    .isInstanceOfSatisfying(UnsupportedContentEncodingException.class, e -> {
                        assertThat(e.getMessage()).isNotBlank();
                    });
        }
    }

    @Test
    void corruptAndTruncatedDataAreMalformed() throws Exception {
        byte[] gz = gzip(text(10_000));
        assertThatThrownBy(() -> BodyDecoding.decodeAll("gzip", Arrays.copyOf(gz, gz.length - 3), 1 << 20))
                .isInstanceOfSatisfying(MalformedBodyException.class, e -> assertThat(e.getMessage()).isNotBlank());
        byte[] badCrc = gz.clone();
        badCrc[badCrc.length - 6] ^= 1;
        assertThatThrownBy(() -> BodyDecoding.decodeAll("gzip", badCrc, 1 << 20)).isInstanceOf(MalformedBodyException.class)
                .hasMessageContaining("CRC32");
        assertThatThrownBy(() -> BodyDecoding.decodeAll("gzip", "plain text".getBytes(StandardCharsets.US_ASCII), 1 << 20))
                .isInstanceOf(MalformedBodyException.class).hasMessageContaining("magic");
        byte[] df = deflate(text(10_000), false);
        assertThatThrownBy(() -> BodyDecoding.decodeAll("deflate", Arrays.copyOf(df, df.length / 2), 1 << 20))
                .isInstanceOf(MalformedBodyException.class);
        assertThat(BodyDecoding.decodeAll("gzip", new byte[0], 10)).isEmpty();
    }

    @Test
    void decodedBodyFeedsTheRedactor() throws Exception {
        String key = "AKIA" + new Fakes(11).of(Fakes.BASE32, 16);
        byte[] body = gzip(("{\"content\": \"aws " + key + "\"}").getBytes(StandardCharsets.US_ASCII));
        StreamingRedactor r = DetectorSet.builtins().newRedactor(BodyFormat.JSON, RedactionAction.REDACT, 1 << 20);
        BodyDecoding.Decoder d = BodyDecoding.decoder(BodyDecoding.parse("gzip"), 1 << 20);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BodyDecoding.Sink sink = (b, off, len) -> out.writeBytes(r.feed(b, off, len));
        d.feed(body, 0, body.length, sink);
        d.finish(sink);
        out.writeBytes(r.finish());
        assertThat(out.toString(StandardCharsets.US_ASCII)).isEqualTo("{\"content\": \"aws [REDACTED:aws-access-key-id]\"}");
        assertThat(r.findings()).isEqualTo(Map.of("aws-access-key-id", 1L));
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }
}
