package dev.sluice.proxy.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * The hash chain of the audit log: every line ends with {@code "prev_hash"}, the lowercase hex
 * SHA-256 of the exact bytes of the line before it (UTF-8, without its {@code \n}). The first line of
 * a brand-new log carries {@link #GENESIS}; the first line of a file started by rotation carries the
 * hash of the last line of the file it replaced, so the chain runs through a whole rotated set.
 */
public final class AuditChain {

    /** The {@code prev_hash} of the very first record of a log: 64 zeros. */
    public static final String GENESIS = "0".repeat(64);

    private static final HexFormat HEX = HexFormat.of();
    private static final int CHUNK = 8192;

    private AuditChain() {
    }

    /** Returns the lowercase hex SHA-256 of {@code length} bytes of {@code bytes} from {@code offset}. */
    public static String sha256Hex(byte[] bytes, int offset, int length) {
        MessageDigest digest = sha256();
        digest.update(bytes, offset, length);
        return HEX.formatHex(digest.digest());
    }

    /** Returns the lowercase hex SHA-256 of {@code bytes}. */
    public static String sha256Hex(byte[] bytes) {
        return sha256Hex(bytes, 0, bytes.length);
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    /**
     * What a writer needs to know about the end of an existing file before it appends.
     *
     * @param lastLineHash hash of the last complete ({@code \n}-terminated) line; null if there is none
     * @param partial true when the file does not end with {@code \n} (a record was cut short)
     * @param size the file's size in bytes (0 when it does not exist)
     */
    record Tail(String lastLineHash, boolean partial, long size) {
        static final Tail EMPTY = new Tail(null, false, 0);
    }

    /**
     * Reads the end of {@code file}: the hash of its last complete line, and whether a partial line
     * follows it. A missing file is {@link Tail#EMPTY}.
     *
     * @throws IOException if the file exists but cannot be read
     */
    static Tail readTail(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size == 0) {
                return Tail.EMPTY;
            }
            long lastNewline = lastIndexOf(ch, size, '\n');
            boolean partial = lastNewline != size - 1;
            if (lastNewline < 0) {
                return new Tail(null, partial, size);
            }
            long start = lastIndexOf(ch, lastNewline, '\n') + 1;
            long length = lastNewline - start;
            if (length > Integer.MAX_VALUE - 8) {
                throw new IOException("audit line too long to hash: " + length + " bytes in " + file);
            }
            ByteBuffer line = ByteBuffer.allocate((int) length);
            while (line.hasRemaining()) {
                if (ch.read(line, start + line.position()) < 0) {
                    throw new IOException("audit log shrank while being read: " + file);
                }
            }
            return new Tail(sha256Hex(line.array()), partial, size);
        } catch (NoSuchFileException e) {
            return Tail.EMPTY;
        }
    }

    /**
     * Returns the {@code prev_hash} the next record appended to {@code active} must carry: the hash of
     * the last complete line of {@code active}, or when it has none, of the newest rotated sibling
     * that has one, or {@link #GENESIS}.
     */
    static String continueFrom(Path active, Tail activeTail) throws IOException {
        if (activeTail.lastLineHash() != null) {
            return activeTail.lastLineHash();
        }
        List<Path> files = AuditReader.files(active);
        for (int i = files.size() - 1; i >= 0; i--) {
            Path f = files.get(i);
            if (f.equals(active)) {
                continue;
            }
            Tail t = readTail(f);
            if (t.lastLineHash() != null) {
                return t.lastLineHash();
            }
        }
        return GENESIS;
    }

    /** Returns the index of the last {@code b} before position {@code end}, or -1. */
    private static long lastIndexOf(FileChannel ch, long end, char b) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(CHUNK);
        long pos = end;
        while (pos > 0) {
            int n = (int) Math.min(CHUNK, pos);
            long from = pos - n;
            buf.clear().limit(n);
            while (buf.hasRemaining()) {
                if (ch.read(buf, from + buf.position()) < 0) {
                    throw new IOException("audit log shrank while being read");
                }
            }
            byte[] a = buf.array();
            for (int i = n - 1; i >= 0; i--) {
                if (a[i] == b) {
                    return from + i;
                }
            }
            pos = from;
        }
        return -1;
    }
}
