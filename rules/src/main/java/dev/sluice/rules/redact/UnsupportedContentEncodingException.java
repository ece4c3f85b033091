package dev.sluice.rules.redact;

/**
 * A body's {@code Content-Encoding} is one Sluice cannot undo (br, zstd, compress, an unknown token, or a
 * stack of codings); the proxy answers 415 {@code unsupported_encoding} rather than pass it unscanned.
 */
public final class UnsupportedContentEncodingException extends Exception {
    private static final long serialVersionUID = 1L;

    public UnsupportedContentEncodingException(String message) {
        super(message);
    }
}
