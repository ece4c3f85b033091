package dev.sluice.certs;

import java.nio.file.Path;

/** {@link LocalCa#create(Path)} found a CA file already in place and was not asked to replace it. */
public final class CaAlreadyExistsException extends CaException {

    /** Creates the exception for the existing {@code file}. */
    public CaAlreadyExistsException(Path file) {
        super(file + ": a CA already exists (use 'sluice ca init --force' to replace it; clients that "
                + "trust the old CA must then be given the new one)");
    }
}
