/**
 * Helpers of the certs module; not API, may change without notice: canonical host checks, RFC 9525
 * hostname matching, PEM, atomic file writes, the pin record JSON shape.
 *
 * <p>Null-marked (JSpecify): parameters, returns and fields are non-null unless annotated {@code @Nullable}.
 */
@NullMarked
package dev.sluice.certs.internal;

import org.jspecify.annotations.NullMarked;
