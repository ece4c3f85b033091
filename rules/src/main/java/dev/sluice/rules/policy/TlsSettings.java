package dev.sluice.rules.policy;

import java.nio.file.Path;
import java.util.List;

/**
 * The {@code tls} section.
 *
 * @param extraTrust PEM files of extra trust anchors for upstream validation, as written (a relative
 *                   path is resolved by the caller against the policy file's directory)
 */
public record TlsSettings(List<Path> extraTrust) {

    /** No extra anchors. */
    public static final TlsSettings NONE = new TlsSettings(List.of());

    public TlsSettings {
        extraTrust = List.copyOf(extraTrust);
    }
}
