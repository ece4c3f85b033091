package dev.sluice.proxy.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Encodes audit records as hash-chained JSON Lines ({@link AuditChain}): each line is the record's
 * JSON object, ending with {@code "prev_hash"} (the lowercase hex SHA-256 of the previous line's exact
 * bytes, without its {@code \n}), then {@code \n}. Used by the one writer thread only (not thread-safe):
 * the order of the lines is the order of the chain.
 */
final class ChainedLineEncoder {

    private final JsonFactory json = JsonFactory.builder().build();
    private String prevHash;

    /** @param prevHash the hash of the line before the first one this encoder writes ({@link AuditChain#GENESIS} for a new log) */
    ChainedLineEncoder(String prevHash) {
        this.prevHash = prevHash;
    }

    /** Appends one line for {@code record} to {@code out} and advances the chain to it. */
    void encode(AuditRecord record, LineBuffer out) {
        int start = out.size();
        try (JsonGenerator g = json.createGenerator(out)) {
            g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
            record.writeJson(g, prevHash);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        prevHash = AuditChain.sha256Hex(out.array(), start, out.size() - start);
        out.write('\n');
    }

    /** Returns the hash of the last line encoded (the next line's {@code prev_hash}). */
    String prevHash() {
        return prevHash;
    }
}
