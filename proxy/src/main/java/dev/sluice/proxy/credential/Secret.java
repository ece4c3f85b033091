package dev.sluice.proxy.credential;

import java.time.Instant;

/**
 * A credential's value in memory, with when it stops being usable. {@link #toString()} masks it; the
 * value itself is read only by the request rewrite.
 *
 * @param value the secret
 * @param expires when it stops being valid ({@link Instant#MAX} for env and file sources)
 */
record Secret(String value, Instant expires) {

    @Override
    public String toString() {
        return "Secret[****, expires=" + expires + "]";
    }
}
