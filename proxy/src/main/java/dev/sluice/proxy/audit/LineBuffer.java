package dev.sluice.proxy.audit;

import java.io.ByteArrayOutputStream;

/** A byte buffer for a batch of audit lines whose backing array the writer reads without a copy. */
final class LineBuffer extends ByteArrayOutputStream {

    LineBuffer(int initialBytes) {
        super(initialBytes);
    }

    /** Returns the backing array; bytes {@code [0, size())} are the content. */
    byte[] array() {
        return buf;
    }
}
