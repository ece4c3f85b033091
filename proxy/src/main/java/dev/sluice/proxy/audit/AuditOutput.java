package dev.sluice.proxy.audit;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/** The file operations the audit writer needs ({@link RotatingFileOutput}); a seam for tests that make writes fail. */
interface AuditOutput extends Closeable {

    /** Writes some of {@code src} (like {@link java.nio.channels.WritableByteChannel#write}); returns the bytes written. */
    int write(ByteBuffer src) throws IOException;

    /** Forces what was written to the storage device (fsync). */
    void force() throws IOException;

    /** Closes the active file durably, renames it to {@code .1} (shifting older ones), opens a new one. */
    default void rotate() throws IOException {
        throw new IOException("rotation is not supported by this output");
    }
}
